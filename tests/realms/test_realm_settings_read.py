"""Realm settings that were stored and read by nothing (docs/decisions/0064): ``eventsListeners``
decides whether events are logged (Keycloak's jboss-logging) and takes no listener this server
lacks (refused by the Admin API, reported and left out by an import); ``clientAuthenticationFlow``
takes only the built-in "clients" flow (refused by both). A refusal leaves the realm unchanged."""
import pytest
from django.test import Client

from realms.models import Realm
from realms.representation import RepresentationError, import_realm

from .test_admin_rest_api import acme, master_api  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


def failed_grant(realm):
    resp = Client().post(f"/realms/{realm}/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": "admin-cli", "username": "nobody", "password": "wrong"})
    assert resp.json()["error"] == "invalid_grant"


def test_events_are_logged_only_for_a_realm_with_jboss_logging(master_api, acme, caplog):
    assert acme.events_listeners == ["jboss-logging"]  # Keycloak's default
    with caplog.at_level("WARNING", logger="idp.events"):
        failed_grant("acme")
        assert "event LOGIN_ERROR realm=acme" in caplog.text
        caplog.clear()
        assert master_api("put", "acme/events/config", {"eventsListeners": []}).status_code == 204
        failed_grant("acme")
        assert "LOGIN_ERROR" not in caplog.text
        assert master_api("put", "acme", {"eventsListeners": ["jboss-logging"]}).status_code == 204
        failed_grant("acme")
        assert "event LOGIN_ERROR realm=acme" in caplog.text


UNKNOWN_LISTENER = "eventsListeners: unknown event listener 'email' (this server has jboss-logging only)"
OTHER_FLOW = ("clientAuthenticationFlow: only the built-in 'clients' flow is supported (client authentication "
              "is chosen per client, by its client authenticator)")


@pytest.mark.parametrize("path, body, message", [
    ("acme/events/config", {"eventsListeners": ["jboss-logging", "email"]}, UNKNOWN_LISTENER),
    ("acme", {"eventsListeners": ["email"], "displayName": "changed"}, UNKNOWN_LISTENER),
    ("acme", {"clientAuthenticationFlow": "browser", "displayName": "changed"}, OTHER_FLOW),
])
def test_the_admin_api_refuses_what_would_not_be_read(master_api, acme, path, body, message):
    resp = master_api("put", path, body)
    assert (resp.status_code, resp.json()) == (400, {"errorMessage": message})
    realm = Realm.objects.get(pk=acme.pk)
    assert (realm.events_listeners, realm.client_authentication_flow, realm.display_name) == (
        ["jboss-logging"], "clients", acme.display_name)


def test_the_built_in_client_authentication_flow_is_taken(master_api, acme):
    assert master_api("put", "acme", {"clientAuthenticationFlow": "clients"}).status_code == 204


def test_an_import_refuses_another_client_authentication_flow():
    with pytest.raises(RepresentationError) as refused:
        import_realm({"realm": "refused", "enabled": True, "clientAuthenticationFlow": "my-clients"})
    assert str(refused.value) == OTHER_FLOW
    assert not Realm.objects.filter(name="refused").exists()


def test_an_import_reports_and_leaves_out_listeners_this_server_lacks():
    result = import_realm({"realm": "listening", "eventsListeners": ["jboss-logging", "email"]})
    assert result.realm.events_listeners == ["jboss-logging"]
    assert ("eventsListeners: event listener 'email' not on this server (it has jboss-logging only), not imported"
            in result.warnings)


def test_an_import_keeps_keycloaks_listener_and_flow():
    realm = import_realm({"realm": "kept", "eventsListeners": ["jboss-logging"],
                          "clientAuthenticationFlow": "clients"}).realm
    assert (realm.events_listeners, realm.client_authentication_flow) == (["jboss-logging"], "clients")
    assert import_realm({"realm": "quiet", "eventsListeners": []}).realm.events_listeners == []
