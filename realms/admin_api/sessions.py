"""The realm's sessions (Keycloak's RealmAdminResource and ClientResource): a client's
``user-sessions`` (``view-clients``), ``logout-all`` (every session of the realm ends and tokens
issued before now stop working, ``notBefore``) and ``DELETE sessions/{id}`` (``manage-users``)."""
from django.db import transaction
from rest_framework import status
from rest_framework.response import Response

from ..audit import admin_events
from ..models import UserSession
from ..sso import sessions
from . import errors
from .clients import _client
from .query import page
from .users import user_session_rep
from .views import RealmResource


class ClientUserSessions(RealmResource):
    required_role = "view-clients"

    def get(self, request, realm, client_uuid):
        client = _client(self.realm, client_uuid)
        found = (UserSession.objects.filter(realm=self.realm, offline=False, client_sessions__client=client)
                 .select_related("user").order_by("started").distinct())
        return Response([user_session_rep(s) for s in page(request, found)])


class LogoutAll(RealmResource):
    """Keycloak answers a GlobalRequestResult (the backchannel logouts it pushed; none here, as
    Keycloak omits empty lists: ``{}``)."""

    required_role = {"POST": "manage-users"}

    def post(self, request, realm):
        with transaction.atomic():
            sessions.logout_all(self.realm)
            admin_events.record(self.realm, "ACTION", "REALM", "logout-all", auth=self.auth_details())
        return Response({})


class SessionDetail(RealmResource):
    required_role = {"DELETE": "manage-users"}

    def delete(self, request, realm, session_id):
        user_session = self.row(UserSession, session_id)
        if user_session is None:
            raise errors.NotFound("Sesssion not found")  # sic: Keycloak's message
        with transaction.atomic():
            sessions.end_session(user_session)
            admin_events.record(self.realm, "DELETE", "USER_SESSION", f"sessions/{session_id}",
                                auth=self.auth_details(), details=admin_events.ended_session(user_session))
        return Response(status=status.HTTP_204_NO_CONTENT)
