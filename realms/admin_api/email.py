"""The Admin REST API's e-mail resources, as Keycloak's: ``POST testSMTPConnection`` (a test
message to the calling admin through the given settings), and a user's
``PUT execute-actions-email`` and ``PUT send-verify-email`` (action-token links, ``realms.http.action_tokens``)."""

from django.db import transaction
from rest_framework import status
from rest_framework.response import Response

from ..audit import admin_events
from ..data.builtins import ACCOUNT_CLIENT
from ..http import action_tokens, email, messages
from ..http.redirects import is_valid_redirect_uri
from ..models import Client
from ..signin.required_actions.verify_email import send_verification
from ..users.actions import required_action_definition
from . import errors
from .realms import MASKED
from .users import user_of
from .views import RealmResource


class ServerError(errors.Invalid):
    """500 ``{"errorMessage": ...}``: Keycloak's ErrorResponse with INTERNAL_SERVER_ERROR."""

    status_code = status.HTTP_500_INTERNAL_SERVER_ERROR


class TestSmtpConnection(RealmResource):
    """The body is the ``smtpServer`` map to try (the password's mask means the stored one)."""

    required_role = {"POST": "manage-realm"}

    def post(self, request, realm):
        settings = request.data if isinstance(request.data, dict) else {}
        settings = {str(k): str(v) for k, v in settings.items() if v is not None}
        if settings.get("password") == MASKED:
            settings["password"] = (self.realm.smtp_server or {}).get("password", "")
        try:
            email.send_test(self.realm, settings, request.user.user)
        except email.TestFailed as exc:
            raise ServerError(str(exc)) from None
        return Response(status=status.HTTP_204_NO_CONTENT)


def _target(resource, request, user_id):
    """(user, client, redirect uri, lifespan) with Keycloak's checks and messages."""
    user = user_of(resource, user_id)
    if not user.email:
        raise errors.Invalid("User email missing")
    if not user.enabled:
        raise errors.Invalid("User is disabled")
    redirect_uri = request.query_params.get("redirect_uri")
    client_id = request.query_params.get("client_id")
    if redirect_uri and not client_id:
        raise errors.Invalid("Client id missing")
    client = Client.objects.filter(realm=resource.realm, client_id=client_id or ACCOUNT_CLIENT).first()
    if client is None:
        raise errors.Invalid("Client doesn't exist")
    if not client.enabled:
        raise errors.Invalid("Client is not enabled")
    if redirect_uri and not is_valid_redirect_uri(client.redirect_uris, redirect_uri):
        raise errors.Invalid("Invalid redirect uri.")
    lifespan = request.query_params.get("lifespan")
    if lifespan is not None:
        try:
            lifespan = int(lifespan)
        except ValueError:
            raise errors.Invalid("Invalid lifespan") from None
        if lifespan <= 0:
            raise errors.Invalid("Invalid lifespan")
    if not email.configured(resource.realm):
        raise ServerError("Failed to send execute actions email: the realm has no SMTP server")
    return user, client, redirect_uri or "", lifespan


class ExecuteActionsEmail(RealmResource):
    """PUT a list of required-action aliases; query ``lifespan``, ``client_id``, ``redirect_uri``."""

    required_role = {"PUT": "manage-users"}

    def put(self, request, realm, user_id):
        actions = request.data
        if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
            raise errors.Invalid("Provided invalid required actions")
        for alias in actions:
            definition = required_action_definition(self.realm, alias)
            if definition is None or not definition["enabled"]:
                raise errors.Invalid("Provided invalid required actions")
        user, client, redirect_uri, lifespan = _target(self, request, user_id)
        lifespan = lifespan or self.realm.action_token_generated_by_admin_lifespan
        token = action_tokens.create(self.realm, user, action_tokens.EXECUTE_ACTIONS, lifespan=lifespan,
                                     client_id=client.client_id, request=request, rqac=list(dict.fromkeys(actions)),
                                     reduri=redirect_uri)
        url = action_tokens.link(self.realm, token, request, client_id=client.client_id)
        locale = email.user_locale(self.realm, user)
        theme = email.email_theme(self.realm)
        names = ", ".join(messages.text(self.realm, locale, f"requiredAction.{a}", theme=theme) for a in actions)
        with transaction.atomic():
            email.send_to_user(self.realm, user, "executeActions", "executeActionsSubject", body_args=(
                url, lifespan // 60, self.realm.display_name or self.realm.name, names,
                email.expiration_text(self.realm, locale, lifespan)))
            admin_events.record(self.realm, "ACTION", "USER", f"users/{user.pk}/execute-actions-email",
                                auth=self.auth_details(), representation=lambda: actions)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SendVerifyEmail(RealmResource):
    required_role = {"PUT": "manage-users"}

    def put(self, request, realm, user_id):
        user, client, redirect_uri, lifespan = _target(self, request, user_id)
        lifespan = lifespan or action_tokens.user_lifespan(self.realm, action_tokens.VERIFY_EMAIL)
        token = action_tokens.create(self.realm, user, action_tokens.VERIFY_EMAIL, lifespan=lifespan,
                                     client_id=client.client_id, request=request, eml=user.email, reduri=redirect_uri)
        url = action_tokens.link(self.realm, token, request, client_id=client.client_id)
        with transaction.atomic():
            send_verification(self.realm, user, url, lifespan, client_id=client.client_id)
            admin_events.record(self.realm, "ACTION", "USER", f"users/{user.pk}/send-verify-email",
                                auth=self.auth_details())
        return Response(status=status.HTTP_204_NO_CONTENT)
