"""Login actions: the sign-in pages post back here, whatever protocol started the sign-in
(Keycloak's ``/realms/<realm>/login-actions/...``). The protocol answers at the end through the
completion it registered with ``realms.flows.register_protocol``."""
from django.views.decorators.http import require_http_methods

from . import auth_sessions, flows, realm_cache, themes
from .messages import Message

EXPIRED = Message("expiredActionMessage")


@require_http_methods(["GET", "POST"])
def authenticate(request, realm):
    config = realm_cache.get_realm(realm)  # 404 for an unknown or disabled realm
    realm_obj = config.realm
    auth_session = auth_sessions.load(request, realm_obj, request.GET.get("tab", ""))
    # The cached row, whose ``realm`` is the cached realm: completions read realm settings
    # through the client without another query.
    client = auth_session and config.client_by_pk(auth_session.client_pk)
    if auth_session is None or client is None or not client.enabled:
        return themes.render(request, realm_obj, "error.html", {"message": EXPIRED}, status=400)
    return flows.advance(request, realm_obj, client, auth_session, is_action=request.method == "POST")
