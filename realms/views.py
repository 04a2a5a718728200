"""Login actions: the sign-in pages post back here, whatever protocol started the sign-in
(Keycloak's ``/realms/<realm>/login-actions/...``). The protocol answers at the end through the
completion it registered with ``realms.flows.register_protocol``."""
from django.http import Http404
from django.views.decorators.http import require_http_methods

from . import auth_sessions, flows, themes
from .models import Client, Realm

EXPIRED = "Your sign-in page has expired. Return to the application and sign in again."


@require_http_methods(["GET", "POST"])
def authenticate(request, realm):
    realm_obj = Realm.objects.filter(name=realm, enabled=True).first()
    if realm_obj is None:
        raise Http404("Realm does not exist")
    auth_session = auth_sessions.load(request, realm_obj, request.GET.get("tab", ""))
    client = auth_session and Client.objects.filter(pk=auth_session.client_pk, realm=realm_obj, enabled=True).first()
    if auth_session is None or client is None:
        return themes.render(request, realm_obj, "error.html", {"message": EXPIRED}, status=400)
    client.realm = realm_obj  # the same row: completions read realm settings through the client
    return flows.advance(request, realm_obj, client, auth_session, is_action=request.method == "POST")
