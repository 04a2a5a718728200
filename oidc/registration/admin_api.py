"""``/admin/realms/{realm}/clients-initial-access`` (Keycloak's ClientInitialAccessResource),
registered from ``OidcConfig.ready()``: GET lists the realm's initial access tokens (without the
token, which is shown once), POST ``{expiration, count}`` creates one and answers it with its
token, DELETE ``{id}`` removes one. ``view-clients`` to list, ``manage-clients`` to change; admin
events on resource type CLIENT_INITIAL_ACCESS_MODEL."""
import time
import uuid

from django.db import transaction
from django.urls import path
from rest_framework import status
from rest_framework.response import Response

from realms.admin_api import errors, registration_policies
from realms.admin_api.views import RealmResource
from realms.audit import admin_events
from realms.http.web import realm_url

from ..models import ClientInitialAccess
from .auth import initial_access_token

RESOURCE = "CLIENT_INITIAL_ACCESS_MODEL"


def rep(row, token=None):
    out = {"id": row.id, "timestamp": row.timestamp, "expiration": row.expiration, "count": row.count,
           "remainingCount": row.remaining_count}
    if token:
        out["token"] = token
    return out


def _number(body, name, default):
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > 2**31 - 1:
        raise errors.Invalid(f"Invalid value for {name}")
    return value


class InitialAccessList(RealmResource):
    required_role = {"GET": "view-clients", "POST": "manage-clients"}

    def get(self, request, realm):
        rows = ClientInitialAccess.objects.filter(realm=self.realm).order_by("timestamp", "id")
        return Response([rep(r) for r in rows])

    def post(self, request, realm):
        body = request.data if isinstance(request.data, dict) else {}
        expiration, count = _number(body, "expiration", 0), _number(body, "count", 1)
        row = ClientInitialAccess(id=str(uuid.uuid4()), realm=self.realm, timestamp=int(time.time()),
                                  expiration=expiration, count=count, remaining_count=count)
        with transaction.atomic():
            row.save()
            admin_events.record(self.realm, "CREATE", RESOURCE, f"clients-initial-access/{row.id}",
                                auth=self.auth_details(), representation=lambda: {"expiration": expiration,
                                                                                 "count": count})
        token = initial_access_token(self.realm, realm_url(request, self.realm.name), row)
        response = Response(rep(row, token), status=status.HTTP_201_CREATED)
        response["Cache-Control"] = "no-store"
        return response


class InitialAccessDetail(RealmResource):
    required_role = {"DELETE": "manage-clients"}

    def delete(self, request, realm, access_id):
        with transaction.atomic():
            deleted, _ = ClientInitialAccess.objects.filter(realm=self.realm, pk=access_id).delete()
            if deleted:
                admin_events.record(self.realm, "DELETE", RESOURCE, f"clients-initial-access/{access_id}",
                                    auth=self.auth_details())
        return Response(status=status.HTTP_204_NO_CONTENT)


R = "<str:realm>"
urlpatterns = [
    path(f"{R}/clients-initial-access", InitialAccessList.as_view()),
    path(f"{R}/clients-initial-access/<str:access_id>", InitialAccessDetail.as_view()),
    # Keycloak's console lists the policy providers beside the initial access tokens.
    path(f"{R}/client-registration-policy/providers", registration_policies.Providers.as_view()),
]
