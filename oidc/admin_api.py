"""The Admin REST API's resources that OpenID Connect holds (registered from
``OidcConfig.ready()``): a user's consents (Keycloak's ``users/{id}/consents``).

GET lists, for each client the user has granted scopes to or holds an offline token of,
Keycloak's map: ``clientId``, ``grantedClientScopes`` (names), ``createdDate`` and
``lastUpdatedDate`` (epoch ms, null without a consent) and ``additionalGrants`` (the offline
token). DELETE ``consents/{clientId}`` revokes both: the consent, the client's share of the
user's sessions (online ones with the consent, as Keycloak logs the client out) and its offline
tokens; 404 when there was neither."""
from django.db import transaction
from django.urls import path
from rest_framework import status
from rest_framework.response import Response

from realms.admin_api import errors
from realms.admin_api.users import user_of
from realms.admin_api.views import RealmResource
from realms.audit import admin_events
from realms.models import Client, ClientScope
from realms.users import consents

from .models import ConsentGrant

OFFLINE_TOKEN = "Offline Token"


def _millis(dt):
    return int(dt.timestamp() * 1000)


def _offline_clients(user):
    return set(Client.objects.filter(sessions__user_session__user=user, sessions__user_session__offline=True)
               .values_list("pk", flat=True))


class Consents(RealmResource):
    required_role = "view-users"

    def get(self, request, realm, user_id):
        user = user_of(self, user_id)
        grants = {g.client_id: g for g in ConsentGrant.objects.filter(user=user)}
        offline = _offline_clients(user)
        names = dict(ClientScope.objects.filter(realm=self.realm).values_list("pk", "name"))
        reps = []
        for client in Client.objects.filter(realm=self.realm, pk__in=set(grants) | offline).order_by("client_id"):
            grant = grants.get(client.pk)
            reps.append({
                "clientId": client.client_id,
                "grantedClientScopes": [names[i] for i in grant.scope_ids if i in names] if grant else [],
                "createdDate": _millis(grant.created) if grant else None,
                "lastUpdatedDate": _millis(grant.updated) if grant else None,
                "additionalGrants": [{"client": client.pk, "key": OFFLINE_TOKEN}] if client.pk in offline else [],
            })
        return Response(reps)


class ConsentDetail(RealmResource):
    required_role = {"DELETE": "manage-users"}

    def delete(self, request, realm, user_id, client_id):
        user = user_of(self, user_id)
        client = Client.objects.filter(realm=self.realm, client_id=client_id).first()
        if client is None:
            raise errors.NotFound("Client not found")
        with transaction.atomic():
            if not consents.revoke_consent(user, client):
                raise errors.NotFound("Consent nor offline token not found")
            admin_events.record(self.realm, "ACTION", "USER", f"users/{user.pk}/consents/{client_id}",
                                auth=self.auth_details())
        return Response(status=status.HTTP_204_NO_CONTENT)


R = "<str:realm>"
urlpatterns = [
    path(f"{R}/users/<str:user_id>/consents", Consents.as_view()),
    path(f"{R}/users/<str:user_id>/consents/<str:client_id>", ConsentDetail.as_view()),
]
