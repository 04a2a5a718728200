from django.urls import path

from . import views

urlpatterns = [
    path("admin/realms/<str:realm>/webhooks", views.endpoints, name="webhooks-list"),
    path("admin/realms/<str:realm>/webhooks/<str:endpoint_id>", views.endpoint, name="webhooks-detail"),
    path("admin/realms/<str:realm>/webhooks/<str:endpoint_id>/rotate-secret", views.rotate_secret),
    path("admin/realms/<str:realm>/webhooks/<str:endpoint_id>/test", views.test_event),
    path("admin/realms/<str:realm>/webhooks/<str:endpoint_id>/deliveries", views.deliveries),
    path("admin/realms/<str:realm>/webhooks/<str:endpoint_id>/redeliver", views.redeliver),
]
