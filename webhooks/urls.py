"""The webhook subscription resources of the Admin REST API, relative to ``/admin/realms/``
(registered with ``realms.admin_api.resources`` from ``WebhooksConfig.ready()``)."""
from django.urls import path

from . import portal, views

urlpatterns = [
    path("<str:realm>/webhooks", views.Endpoints.as_view(), name="webhooks-list"),
    # Before the endpoint's own path, whose id would match them.
    path("<str:realm>/webhooks/event-types", views.EventTypes.as_view()),
    path("<str:realm>/webhooks/event-types/<str:event_type>/schema", views.EventTypeSchema.as_view()),
    path("<str:realm>/webhooks/asyncapi", views.AsyncApi.as_view()),
    path("<str:realm>/webhooks/<str:endpoint_id>", views.EndpointDetail.as_view(), name="webhooks-detail"),
    path("<str:realm>/webhooks/<str:endpoint_id>/rotate-secret", views.RotateSecret.as_view()),
    path("<str:realm>/webhooks/<str:endpoint_id>/test", views.TestEvent.as_view()),
    path("<str:realm>/webhooks/<str:endpoint_id>/deliveries", views.Deliveries.as_view()),
    path("<str:realm>/webhooks/<str:endpoint_id>/redeliver", views.Redeliver.as_view()),
    path("<str:realm>/webhooks/<str:endpoint_id>/portal-link", portal.PortalLink.as_view()),
]
