"""Admin REST API under /admin/realms/<realm>/webhooks with a master-realm admin's bearer token,
obtained like Keycloak's admin tools: password grant on the master realm's admin-cli."""
import base64
import json
from datetime import timedelta

import pytest
import standardwebhooks
from django.test import Client
from django.utils import timezone

from realms.models import Realm, Role
from realms.users.accounts import create_user
from webhooks import delivery, signing
from webhooks.models import Delivery, Endpoint

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]

PASSWORD = "wh-admin-password-1"


def _token(username):
    resp = Client().post("/realms/master/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": "admin-cli", "username": username, "password": PASSWORD})
    assert resp.status_code == 200, resp.content
    return resp.json()["access_token"]


@pytest.fixture(scope="module")
def tokens(django_db_setup, django_db_blocker):
    """An admin and a non-admin of the master realm, created once for the module."""
    with django_db_blocker.unblock():
        master = Realm.objects.get(name="master")
        admin = create_user(master, "wh-admin", password=PASSWORD, email="wh-admin@example.org")
        admin.roles.add(Role.objects.get(realm=master, client=None, name="admin"))
        plain = create_user(master, "wh-plain", password=PASSWORD)
        yield {"admin": _token("wh-admin"), "plain": _token("wh-plain")}
        admin.delete()
        plain.delete()


@pytest.fixture
def api(tokens):
    client = Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Bearer {tokens['admin']}")

    def call(method, path, body=None, **extra):
        kwargs = {"content_type": "application/json", "data": json.dumps(body)} if body is not None else {}
        return getattr(client, method)(f"/admin/realms/wh-realm/webhooks{path}", **kwargs, **extra)

    return call


def test_create_list_get_update_delete(realm, api, receiver_server):
    resp = api("post", "", {"url": receiver_server.url(), "eventTypes": ["user.*", "auth.login"],
                            "description": "CRM sync"})
    assert resp.status_code == 201
    created = resp.json()
    assert created["secret"].startswith("whsec_") and len(signing.decode_secret(created["secret"])) == 32
    assert resp["Location"].endswith(f"/admin/realms/wh-realm/webhooks/{created['id']}")
    assert {k: created[k] for k in ("url", "eventTypes", "enabled", "description", "signature")} == {
        "url": receiver_server.url(), "eventTypes": ["user.*", "auth.login"], "enabled": True,
        "description": "CRM sync", "signature": "v1"}
    assert created["createdAt"].endswith("Z")
    listed = api("get", "").json()
    assert [e["id"] for e in listed] == [created["id"]] and "secret" not in listed[0]
    assert api("put", f"/{created['id']}", {"enabled": False, "eventTypes": ["client.*"]}).status_code == 204
    got = api("get", f"/{created['id']}").json()
    assert got["enabled"] is False and got["eventTypes"] == ["client.*"]
    assert api("delete", f"/{created['id']}").status_code == 204
    assert api("get", f"/{created['id']}").status_code == 404


def test_create_with_own_secret_and_v1a(realm, api, receiver_server):
    own = signing.generate_secret(24)
    resp = api("post", "", {"url": receiver_server.url(), "secret": own})
    assert resp.status_code == 201 and resp.json()["secret"] == own
    resp = api("post", "", {"url": receiver_server.url(), "signature": "v1a"})
    body = resp.json()
    assert body["signature"] == "v1a" and body["publicKey"].startswith("whpk_") and "secret" not in body
    assert body["publicKeys"] == [body["publicKey"]]


@pytest.mark.parametrize("body,needle", [
    ({"url": "http://hooks.example.com/x"}, "https"),
    ({"url": "ftp://hooks.example.com/x"}, "https"),
    ({"url": "https://hooks.example.com/x", "eventTypes": ["nope.never"]}, "unknown event type"),
    ({"url": "https://hooks.example.com/x", "secret": "whsec_c2hvcnQ="}, "24 to 64"),
    ({"url": "https://hooks.example.com/x", "maxConcurrency": 0}, "maxConcurrency"),
    ({"url": "https://hooks.example.com/x", "bogus": 1}, "unknown field"),
    ({"eventTypes": []}, "url is required"),
])
def test_invalid_input_is_400(realm, api, settings, body, needle):
    settings.IDP_OUTBOUND_ALLOW_HTTP = False
    resp = api("post", "", body)
    assert resp.status_code == 400 and needle in resp.json()["errorMessage"]
    assert not Endpoint.objects.exists()


def test_rotate_send_test_log_and_redeliver(realm, api, receiver_server, monkeypatch, django_capture_on_commit_callbacks):
    created = api("post", "", {"url": receiver_server.url()}).json()
    rotated = api("post", f"/{created['id']}/rotate-secret", {"overlapSeconds": 3600}).json()["secret"]
    sent = []
    monkeypatch.setattr("webhooks.dispatch.deliveries", lambda ids: sent.extend(ids))
    with django_capture_on_commit_callbacks(execute=True):
        resp = api("post", f"/{created['id']}/test", {})
    assert resp.status_code == 202
    event_id = resp.json()["eventId"]
    delivery.attempt(sent[0])
    req = receiver_server.requests[0]
    for secret in (created["secret"], rotated):
        assert standardwebhooks.Webhook(secret).verify(req["body"], req["headers"])["type"] == "webhook.test"
    log = api("get", f"/{created['id']}/deliveries").json()
    assert [(row["eventId"], row["attempt"], row["status"], row["success"]) for row in log] == [(event_id, 1, 200, True)]
    with django_capture_on_commit_callbacks(execute=True):
        assert api("post", f"/{created['id']}/redeliver", {"eventId": event_id}).json() == {"count": 1}
    now = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        resp = api("post", f"/{created['id']}/redeliver", {
            "since": (now - timedelta(hours=1)).isoformat(), "until": (now + timedelta(hours=1)).isoformat()})
    assert resp.json() == {"count": 1}
    assert Delivery.objects.get().state == Delivery.PENDING
    assert api("post", f"/{created['id']}/redeliver", {"since": "yesterday", "until": "now"}).status_code == 400
    assert api("post", f"/{created['id']}/redeliver", {"eventId": "msg_nope"}).status_code == 400
    # Rotation at once (after a leak): only the new secret signs from now on.
    leaked = api("post", f"/{created['id']}/rotate-secret", {"overlapSeconds": 0}).json()["secret"]
    assert leaked not in (created["secret"], rotated)


def test_unknown_realm_is_404(api, tokens):
    resp = Client(HTTP_AUTHORIZATION=f"Bearer {tokens['admin']}").get("/admin/realms/no-such-realm/webhooks")
    assert resp.status_code == 404


@pytest.mark.parametrize("header", ["", "Bearer ", "Bearer not.a.token", "Basic Zm9vOmJhcg=="])
def test_missing_or_bad_token_is_401(realm, header):
    resp = Client(HTTP_AUTHORIZATION=header).get("/admin/realms/wh-realm/webhooks")
    assert resp.status_code == 401 and resp.json() == {"error": "HTTP 401 Unauthorized"}


def test_tampered_token_is_401(realm, tokens):
    head, body, sig = tokens["plain"].split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    claims["realm_access"] = {"roles": ["admin"]}
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    resp = Client(HTTP_AUTHORIZATION=f"Bearer {head}.{forged}.{sig}").get("/admin/realms/wh-realm/webhooks")
    assert resp.status_code == 401


def test_token_of_another_realm_or_host_is_401(realm, tokens):
    # The issuer is bound to the host the API is called on (IDP_BASE_URL empty): another host, another issuer.
    resp = Client(HTTP_AUTHORIZATION=f"Bearer {tokens['admin']}", HTTP_HOST="other.example").get(
        "/admin/realms/wh-realm/webhooks")
    assert resp.status_code == 401


def test_non_admin_is_403(realm, tokens):
    resp = Client(HTTP_AUTHORIZATION=f"Bearer {tokens['plain']}").get("/admin/realms/wh-realm/webhooks")
    assert resp.status_code == 403 and resp.json() == {"error": "HTTP 403 Forbidden"}


def test_disabled_admin_is_401(realm, tokens):
    from realms.models import User

    User.objects.filter(username="wh-admin", realm__name="master").update(enabled=False)
    resp = Client(HTTP_AUTHORIZATION=f"Bearer {tokens['admin']}").get("/admin/realms/wh-realm/webhooks")
    assert resp.status_code == 401


def test_changes_are_admin_events_and_never_webhooks(realm, api, receiver_server, monkeypatch,
                                                     django_capture_on_commit_callbacks):
    from realms.models import Event, User
    from webhooks.models import Message

    monkeypatch.setattr("webhooks.dispatch.deliveries", lambda ids: None)
    realm.admin_events_details_enabled = True
    realm.save()
    admin = User.objects.get(username="wh-admin", realm__name="master")
    with django_capture_on_commit_callbacks(execute=True):
        # An endpoint subscribed to every type: a webhook about webhooks would reach it.
        created = api("post", "", {"url": receiver_server.url(), "eventTypes": []}, REMOTE_ADDR="203.0.113.7").json()
        api("put", f"/{created['id']}", {"description": "changed"})
        api("post", f"/{created['id']}/rotate-secret", {"overlapSeconds": 0})
        api("delete", f"/{created['id']}")
    events = list(Event.objects.filter(realm=realm, kind=Event.ADMIN).order_by("time"))
    assert [(e.type, e.resource_type, e.resource_path) for e in events] == [
        (op, "WEBHOOK_ENDPOINT", f"webhooks/{created['id']}") for op in ("CREATE", "UPDATE", "ACTION", "DELETE")]
    assert all(e.user_id == admin.pk and e.details["authRealmId"] == admin.realm_id for e in events)
    assert events[0].ip_address == "203.0.113.7" and events[2].details["action"] == "rotate-secret"
    rep = json.loads(events[1].representation)
    assert rep["description"] == "changed" and "secret" not in json.dumps(rep)
    assert not Message.objects.exists()  # no loop


def test_ownership_handshake_over_rest(realm, api, receiver_server, settings):
    settings.IDP_WEBHOOK_ORIGIN = "idp.example.org"
    resp = api("post", "", {"url": receiver_server.url(), "ownershipHandshake": True})
    assert resp.status_code == 400 and "did not agree" in resp.json()["errorMessage"]
    receiver_server.default = (200, {"WebHook-Allowed-Origin": "idp.example.org"}, b"")
    body = api("post", "", {"url": receiver_server.url(), "ownershipHandshake": True}).json()
    assert body["ownershipHandshake"] is True and body["handshakeAt"].endswith("Z")


def _fresh_admin_token():
    """A token of its own (revoking or ending it must not spoil the module's shared tokens)."""
    return _token("wh-admin")


def test_revoked_access_token_is_401(realm):
    token = _fresh_admin_token()
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert api.get("/admin/realms/wh-realm/webhooks").status_code == 200
    resp = Client().post("/realms/master/protocol/openid-connect/revoke",
                         {"token": token, "client_id": "admin-cli", "token_type_hint": "access_token"})
    assert resp.status_code == 200
    resp = api.get("/admin/realms/wh-realm/webhooks")
    assert resp.status_code == 401 and resp.json() == {"error": "HTTP 401 Unauthorized"}


def test_token_of_an_ended_session_is_401(realm):
    from realms.models import UserSession
    from realms.sso import sessions

    token = _fresh_admin_token()
    sid = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))["sid"]
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert api.get("/admin/realms/wh-realm/webhooks").status_code == 200
    sessions.end_session(UserSession.objects.get(pk=sid), reason=sessions.REASON_LOGOUT)
    resp = api.get("/admin/realms/wh-realm/webhooks")
    assert resp.status_code == 401 and resp.json() == {"error": "HTTP 401 Unauthorized"}


@pytest.mark.parametrize("body", ["[" * 100_000, '{"url":' * 100_000, "{not json"])
def test_unreadable_or_deeply_nested_json_is_400(realm, tokens, body):
    resp = Client(HTTP_AUTHORIZATION=f"Bearer {tokens['admin']}").post(
        "/admin/realms/wh-realm/webhooks", body, content_type="application/json")
    assert resp.status_code == 400
    assert resp.json() == {"error": "unknown_error", "error_description": "Cannot parse the JSON"}
    assert not Endpoint.objects.exists()


@pytest.fixture
def two_realms(tokens):
    """Realms A and B (with Keycloak's built-ins, so realm-management and admin-cli) and their
    users: B's realm-admin, A's realm-admin, A's view-events only, A's user without roles."""
    from realms.data import realm_cache
    from realms.representation.services import create_realm

    realm_cache.clear()  # the realms of an earlier test (same names, other ids) were rolled back
    realm_a, realm_b = create_realm("wh-a"), create_realm("wh-b")

    def user(realm, name, *roles):
        created = create_user(realm, name, password=PASSWORD)
        created.roles.add(*Role.objects.filter(realm=realm, client__client_id="realm-management", name__in=roles))
        resp = Client().post(f"/realms/{realm.name}/protocol/openid-connect/token", {
            "grant_type": "password", "client_id": "admin-cli", "username": name, "password": PASSWORD})
        assert resp.status_code == 200, resp.content
        return created, resp.json()["access_token"]

    return {
        "b-admin": user(realm_b, "b-admin", "realm-admin"),
        "a-admin": user(realm_a, "a-admin", "realm-admin"),
        "a-viewer": user(realm_a, "a-viewer", "view-events"),
        "a-plain": user(realm_a, "a-plain"),
        "master": (None, tokens["admin"]),
    }


def _call(token, method, realm, body=None):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    kwargs = {"data": json.dumps(body), "content_type": "application/json"} if body is not None else {}
    return getattr(client, method)(f"/admin/realms/{realm}/webhooks", **kwargs)


def test_realm_management_roles_manage_their_own_realm_only(two_realms, receiver_server):
    new = {"url": receiver_server.url()}
    # Realm B's admin sees nothing of realm A, and manages B.
    b_token = two_realms["b-admin"][1]
    assert _call(b_token, "get", "wh-a").status_code == 403
    resp = _call(b_token, "post", "wh-a", new)
    assert resp.status_code == 403 and resp.json() == {"error": "HTTP 403 Forbidden"}
    assert _call(b_token, "get", "wh-b").status_code == 200
    assert _call(b_token, "post", "wh-b", new).status_code == 201
    # The master realm's admin manages every realm.
    assert _call(two_realms["master"][1], "post", "wh-a", new).status_code == 201
    # Realm A: realm-admin (composite) may all, view-events may read only, no role nothing.
    assert _call(two_realms["a-admin"][1], "post", "wh-a", new).status_code == 201
    viewer = two_realms["a-viewer"][1]
    assert len(_call(viewer, "get", "wh-a").json()) == 2
    assert _call(viewer, "post", "wh-a", new).status_code == 403
    assert _call(two_realms["a-plain"][1], "get", "wh-a").status_code == 403
    # An unknown realm is a 404 before any role check, as in Keycloak.
    resp = _call(two_realms["a-plain"][1], "get", "no-such-realm")
    assert resp.status_code == 404 and resp.json() == {"error": "Realm not found."}


def test_a_removed_role_takes_effect_at_once(two_realms):
    user, token = two_realms["a-admin"]
    assert _call(token, "get", "wh-a").status_code == 200
    user.roles.clear()
    assert _call(token, "get", "wh-a").status_code == 403
