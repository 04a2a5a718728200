"""The Shared Signals transmitter end to end: a receiver client with ``ssf.manage`` / ``ssf.read``
tokens manages its stream over HTTP; real actions (a refresh-token logout, an admin's password
reset, sign-out and enabled switch through the Admin REST API) produce SETs that a loopback HTTP
receiver gets pushed (RFC 8935) or that the receiver polls (RFC 8936), and that it verifies with
joserfc (Authlib's JOSE library, not our code) against the keys at the discovery's jwks_uri."""
import json
import time
import uuid

import pytest
from django.db import transaction
from django.test import Client as HttpClient
from joserfc import jwt
from joserfc.jwk import KeySet

from oidc.ssf import events, streams
from oidc.ssf.models import SsfStream
from realms.audit import events as realm_events
from realms.models import Realm, Role, User
from realms.representation import import_realm
from realms.representation.realm import export_realm
from realms.users.accounts import create_user
from tests.servers import Receiver
from webhooks import delivery
from webhooks.models import Delivery, DeliveryAttempt, Endpoint

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("outbound_loopback", "ssf_feature")]

SECRET = "receiver-secret-" + "x" * 20
ADMIN_PASSWORD = "ssf-admin-password-1"
USER_PASSWORD = "alice-password-1"
MANAGE = "ssf.read ssf.manage"
CAEP = "https://schemas.openid.net/secevent/caep/event-type/"
RISC = "https://schemas.openid.net/secevent/risc/event-type/"
ALL_EVENTS = [CAEP + "session-revoked", CAEP + "credential-change", RISC + "account-disabled",
              RISC + "account-enabled"]


@pytest.fixture
def ssf_feature(settings):
    settings.IDP_FEATURES = "ssf"  # experimental, as Keycloak's: off unless enabled


def _scope(name):
    return {"name": name, "protocol": "openid-connect",
            "attributes": {"include.in.token.scope": "true", "display.on.consent.screen": "false"}}


def _receiver_client(client_id, **attributes):
    return {"clientId": client_id, "secret": SECRET, "serviceAccountsEnabled": True,
            "attributes": {"ssf.enabled": "true", **attributes}, "optionalClientScopes": ["ssf.read", "ssf.manage"]}


@pytest.fixture
def realm(db):
    name = "ssf" + uuid.uuid4().hex[:8]
    return import_realm({
        "realm": name, "enabled": True, "attributes": {"ssf.transmitterEnabled": "true"},
        "clientScopes": [_scope("ssf.read"), _scope("ssf.manage")],
        "clients": [
            _receiver_client("receiver"),
            _receiver_client("picky", **{"ssf.defaultSubjects": "NONE", "ssf.userSubjectFormat": "email",
                                          "ssf.streamAudience": "https://picky.example/ssf"}),
            _receiver_client("ec", **{"ssf.signatureAlgorithm": "ES256"}),
            _receiver_client("hs", **{"ssf.signatureAlgorithm": "HS256"}),
            _receiver_client("odd", **{"ssf.userSubjectFormat": "phone_number"}),
            _receiver_client("some", **{"ssf.defaultSubjects": "SOME"}),
            {"clientId": "plain", "secret": SECRET, "serviceAccountsEnabled": True,
             "optionalClientScopes": ["ssf.read", "ssf.manage"]},
            {"clientId": "app", "secret": SECRET, "directAccessGrantsEnabled": True},
        ],
        "users": [
            {"username": "alice", "enabled": True, "email": "alice@example.org",
             "credentials": [{"type": "password", "value": USER_PASSWORD}]},
            {"username": "bob", "enabled": True, "email": "bob@example.org"},
        ],
    }).realm


@pytest.fixture(scope="module")
def admin_token(django_db_setup, django_db_blocker):
    """A master-realm admin's token, as Keycloak's admin tools get one (password grant on admin-cli)."""
    with django_db_blocker.unblock():
        master = Realm.objects.get(name="master")
        admin = create_user(master, "ssf-admin", password=ADMIN_PASSWORD)
        admin.roles.add(Role.objects.get(realm=master, client=None, name="admin"))
        resp = HttpClient().post("/realms/master/protocol/openid-connect/token", {
            "grant_type": "password", "client_id": "admin-cli", "username": "ssf-admin", "password": ADMIN_PASSWORD})
        assert resp.status_code == 200, resp.content
        yield resp.json()["access_token"]
        admin.delete()


@pytest.fixture
def push_server():
    server = Receiver("127.0.0.1", default=(202, {}, b""))  # RFC 8935 §2: 202 Accepted
    yield server
    server.close()


def token(realm, client_id="receiver", scope=MANAGE):
    resp = HttpClient().post(f"/realms/{realm.name}/protocol/openid-connect/token", {
        "grant_type": "client_credentials", "client_id": client_id, "client_secret": SECRET, "scope": scope})
    assert resp.status_code == 200, resp.content
    return resp.json()["access_token"]


class Api:
    """The receiver's calls to the transmitter, with its bearer token."""

    def __init__(self, realm, bearer):
        self.base = f"/realms/{realm.name}/ssf/transmitter/"
        self.http = HttpClient(HTTP_AUTHORIZATION=f"Bearer {bearer}")

    def __call__(self, method, path, body=None, **query):
        path = self.base + path + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")
        if body is None:
            return getattr(self.http, method)(path)
        return getattr(self.http, method)(path, data=json.dumps(body), content_type="application/json")


def admin(admin_token, method, path, body=None):
    http = HttpClient(HTTP_AUTHORIZATION=f"Bearer {admin_token}")
    kwargs = {"data": json.dumps(body), "content_type": "application/json"} if body is not None else {}
    resp = getattr(http, method)(f"/admin/realms/{path}", **kwargs)
    assert resp.status_code in (200, 204), resp.content
    return resp


def user_id(realm, username):
    return User.objects.get(realm=realm, username=username).pk


def keys(realm):
    """The JWKS where the discovery document says it is."""
    config = HttpClient().get(f"/realms/{realm.name}/.well-known/ssf-configuration").json()
    path = config["jwks_uri"].removeprefix("http://testserver")
    return KeySet.import_key_set(HttpClient().get(path).json())


def verified(realm, set_token, stream):
    """The SET's claims as a third-party library verifies them: signature with the realm's key,
    explicit type, issuer and audience."""
    decoded = jwt.decode(set_token, keys(realm), algorithms=["RS256"])
    assert decoded.header["typ"] == "secevent+jwt"
    claims = decoded.claims
    assert claims["iss"] == f"http://testserver/realms/{realm.name}"
    assert claims["aud"] == stream["aud"][0] and claims["jti"] and isinstance(claims["iat"], int)
    return claims


def send_pending(stream_id):
    """What the webhook workers do after the commit (the test's transaction never commits)."""
    ids = list(Delivery.objects.filter(endpoint__ssf_stream=stream_id, state=Delivery.PENDING)
               .values_list("pk", flat=True))
    delivery.process(ids, inline=True)
    return ids


def pushed(realm, server, stream):
    """The SETs the receiver got, verified, oldest first."""
    out = []
    for request in server.requests:
        assert request["headers"]["Content-Type"] == "application/secevent+jwt"
        out.append(verified(realm, request["body"].decode(), stream))
    return out


def push_stream(api, server, events_requested=ALL_EVENTS):
    resp = api("post", "streams", {"delivery": {"method": "urn:ietf:rfc:8935", "endpoint_url": server.url()},
                                   "events_requested": events_requested, "description": "test receiver"})
    assert resp.status_code == 201, resp.content
    return resp.json()


def test_discovery_in_both_forms_and_404_while_the_transmitter_is_off(realm, settings):
    http = HttpClient()
    config = http.get(f"/realms/{realm.name}/.well-known/ssf-configuration").json()
    issuer = f"http://testserver/realms/{realm.name}"
    assert config["issuer"] == issuer and config["spec_version"] == "1_0"
    assert config["configuration_endpoint"] == issuer + "/ssf/transmitter/streams"
    assert config["status_endpoint"] == issuer + "/ssf/transmitter/streams/status"
    assert config["verification_endpoint"] == issuer + "/ssf/transmitter/verify"
    assert config["add_subject_endpoint"] == issuer + "/ssf/transmitter/subjects:add"
    assert config["delivery_methods_supported"] == [
        "urn:ietf:rfc:8935", "https://schemas.openid.net/secevent/risc/delivery-method/push",
        "urn:ietf:rfc:8936", "https://schemas.openid.net/secevent/risc/delivery-method/poll"]
    assert config["authorization_schemes"] == [{"spec_urn": "urn:ietf:rfc:6749"}]
    assert config["default_subjects"] == "ALL"
    assert http.get(f"/.well-known/ssf-configuration/realms/{realm.name}").json() == config
    realm.attributes = {**realm.attributes, "ssf.defaultSubjects": "NONE"}
    realm.save()
    assert http.get(f"/realms/{realm.name}/.well-known/ssf-configuration").json()["default_subjects"] == "NONE"
    bearer = token(realm)
    settings.IDP_FEATURES = ""  # the server feature off: as if the realm had no switch
    assert http.get(f"/realms/{realm.name}/.well-known/ssf-configuration").status_code == 404
    assert Api(realm, bearer)("get", "streams").status_code == 404
    settings.IDP_FEATURES = "ssf"
    realm.attributes = {**realm.attributes, "ssf.transmitterEnabled": "false"}
    realm.save()
    assert http.get(f"/realms/{realm.name}/.well-known/ssf-configuration").status_code == 404
    assert http.get(f"/.well-known/ssf-configuration/realms/{realm.name}").status_code == 404
    assert Api(realm, bearer)("get", "streams").status_code == 404


def test_https_required_is_refused_in_oauth_json(realm):
    realm.ssl_required = "all"
    realm.save()
    for path in (f"/realms/{realm.name}/.well-known/ssf-configuration", f"/realms/{realm.name}/ssf/transmitter/streams",
                 f"/realms/{realm.name}/ssf/transmitter/poll/any"):
        refused = HttpClient().get(path)
        assert refused.status_code == 403 and refused.json()["error"] == "invalid_request", path


def test_enabling_the_transmitter_makes_the_missing_scopes(admin_token):
    name = "ssf" + uuid.uuid4().hex[:8]
    import_realm({"realm": name, "enabled": True})
    realm_rep = admin(admin_token, "get", name).json()
    assert not {"ssf.read", "ssf.manage"} & {s["name"] for s in admin(admin_token, "get", f"{name}/client-scopes").json()}
    admin(admin_token, "put", name, {**realm_rep, "attributes": {**realm_rep.get("attributes", {}),
                                                                 "ssf.transmitterEnabled": "true"}})
    optional = {s["name"] for s in admin(admin_token, "get", f"{name}/default-optional-client-scopes").json()}
    assert {"ssf.read", "ssf.manage"} <= optional
    admin(admin_token, "put", name, {"displayName": "again"})  # already there: nothing doubled
    assert [s["name"] for s in admin(admin_token, "get", f"{name}/client-scopes").json()].count("ssf.read") == 1


def test_push_stream_management_and_every_event_type_from_real_actions(realm, admin_token, push_server):
    api = Api(realm, token(realm))
    stream = push_stream(api, push_server)
    assert stream["iss"] == f"http://testserver/realms/{realm.name}"
    assert stream["aud"] == [f"receiver/{stream['stream_id']}"] and stream["events_delivered"] == ALL_EVENTS
    assert stream["delivery"] == {"method": "urn:ietf:rfc:8935", "endpoint_url": push_server.url()}
    assert api("get", "streams").json() == [stream]
    assert api("get", "streams", stream_id=stream["stream_id"]).json() == stream
    patched = api("patch", "streams", {"stream_id": stream["stream_id"], "description": "renamed",
                                       "events_requested": [*ALL_EVENTS, "urn:unknown"]}).json()
    assert patched["description"] == "renamed" and patched["events_delivered"] == ALL_EVENTS
    assert api("post", "streams", {"delivery": stream["delivery"]}).status_code == 409  # one per receiver
    # The stream's webhook endpoint carries its SETs only: the webhook API's test event is refused.
    endpoint_id = SsfStream.objects.get(pk=stream["stream_id"]).endpoint_id
    test_event = HttpClient(HTTP_AUTHORIZATION=f"Bearer {admin_token}").post(
        f"/admin/realms/{realm.name}/webhooks/{endpoint_id}/test")
    assert test_event.status_code == 400 and "only the stream's" in test_event.json()["errorMessage"]

    assert api("post", "verify", {"stream_id": stream["stream_id"], "state": "s-1"}).status_code == 204
    alice = user_id(realm, "alice")
    # A user's own logout: password grant, then the refresh token's logout.
    grant = HttpClient().post(f"/realms/{realm.name}/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": "app", "client_secret": SECRET, "username": "alice",
        "password": USER_PASSWORD}).json()
    assert HttpClient().post(f"/realms/{realm.name}/protocol/openid-connect/logout", {
        "client_id": "app", "client_secret": SECRET, "refresh_token": grant["refresh_token"]}).status_code == 204
    admin(admin_token, "put", f"{realm.name}/users/{alice}/reset-password",
          {"type": "password", "value": "a-new-password-2", "temporary": False})
    admin(admin_token, "post", f"{realm.name}/users/{alice}/logout")
    admin(admin_token, "put", f"{realm.name}/users/{alice}", {"enabled": False})
    admin(admin_token, "put", f"{realm.name}/users/{alice}", {"enabled": False, "firstName": "A"})  # no change
    admin(admin_token, "put", f"{realm.name}/users/{alice}", {"enabled": True})
    sent = send_pending(stream["stream_id"])
    assert Delivery.objects.filter(pk__in=sent, state=Delivery.DELIVERED).count() == len(sent) == 6

    got = pushed(realm, push_server, stream)
    assert [next(iter(c["events"])) for c in got] == [
        events.VERIFICATION, CAEP + "session-revoked", CAEP + "credential-change", CAEP + "session-revoked",
        RISC + "account-disabled", RISC + "account-enabled"]
    verification, logout, password, admin_logout, disabled, enabled = got
    assert verification["sub_id"] == {"format": "opaque", "id": stream["stream_id"]}
    assert verification["events"][events.VERIFICATION]["state"] == "s-1"
    user = {"format": "iss_sub", "iss": stream["iss"], "sub": alice}
    assert logout["sub_id"]["user"] == user and logout["sub_id"]["format"] == "complex"
    assert logout["sub_id"]["session"]["id"] and logout["events"][CAEP + "session-revoked"]["initiating_entity"] == "user"
    assert password["sub_id"] == user
    assert password["events"][CAEP + "credential-change"] | {"event_timestamp": 0} == {
        "credential_type": "password", "change_type": "update", "initiating_entity": "admin", "event_timestamp": 0}
    assert admin_logout["sub_id"]["session"] == {"format": "opaque", "id": "ALL"}
    assert disabled["sub_id"] == enabled["sub_id"] == user
    assert len({c["jti"] for c in got}) == 6
    # The push's webhook-id is the SET's jti: one id for the receiver's de-duplication.
    assert [r["headers"]["webhook-id"] for r in push_server.requests] == [c["jti"] for c in got]

    replaced = api("put", "streams", {"stream_id": stream["stream_id"], "delivery": stream["delivery"],
                                      "events_requested": [RISC + "account-disabled"]}).json()
    assert replaced["events_delivered"] == [RISC + "account-disabled"] and "description" not in replaced
    admin(admin_token, "put", f"{realm.name}/users/{alice}", {"enabled": False})
    admin(admin_token, "put", f"{realm.name}/users/{alice}", {"enabled": True})  # not requested any more
    assert len(send_pending(stream["stream_id"])) == 1
    assert api("delete", "streams", stream_id=stream["stream_id"]).status_code == 204
    assert api("get", "streams").json() == []
    assert not SsfStream.objects.filter(pk=stream["stream_id"]).exists()


def test_poll_stream_returns_acknowledges_and_waits(realm, admin_token, monkeypatch):
    api = Api(realm, token(realm))
    stream = api("post", "streams", {"delivery": {"method": "urn:ietf:rfc:8936"},
                                     "events_requested": ALL_EVENTS}).json()
    poll_url = stream["delivery"]["endpoint_url"]
    assert poll_url == f"{stream['iss']}/ssf/transmitter/poll/{stream['stream_id']}"
    poll = poll_url.removeprefix(f"{stream['iss']}/ssf/transmitter/")
    bob = user_id(realm, "bob")
    for enabled in (False, True, False):
        admin(admin_token, "put", f"{realm.name}/users/{bob}", {"enabled": enabled})
    assert send_pending(stream["stream_id"])  # a poll stream's SETs are never due for the sender
    assert Delivery.objects.filter(endpoint__ssf_stream=stream["stream_id"], state=Delivery.PENDING).count() == 3

    first = api("post", poll, {"maxEvents": 2, "returnImmediately": True}).json()
    assert first["moreAvailable"] is True and len(first["sets"]) == 2
    claims = {jti: verified(realm, s, stream) for jti, s in first["sets"].items()}
    assert all(c["jti"] == jti for jti, c in claims.items())
    assert [next(iter(c["events"])) for c in claims.values()] == [RISC + "account-disabled", RISC + "account-enabled"]
    again = api("post", poll, {"maxEvents": 2, "returnImmediately": True}).json()
    assert again["sets"].keys() == first["sets"].keys()  # not acknowledged: sent again
    jti_a, jti_b = first["sets"]
    rest = api("post", poll, {"ack": [jti_a], "setErrs": {jti_b: {"err": "invalid_key", "description": "x"}},
                              "returnImmediately": True}).json()
    assert rest["moreAvailable"] is False and len(rest["sets"]) == 1 and jti_a not in rest["sets"]
    assert Delivery.objects.get(message_id=jti_b).last_error == "invalid_key: x"
    api("post", poll, {"ack": list(rest["sets"]), "maxEvents": 0})
    assert api("post", poll, {"returnImmediately": True}).json() == {"sets": {}, "moreAvailable": False}

    monkeypatch.setattr(streams, "LONG_POLL_SECONDS", 0.6)
    started = time.monotonic()
    assert api("post", poll, {}).json()["sets"] == {}
    assert time.monotonic() - started >= 0.5  # returnImmediately false: held open until the timeout
    assert api("post", poll, {"maxEvents": -1}).status_code == 400
    assert api("post", poll, {"ack": "x"}).status_code == 400


def test_a_users_own_credential_changes(realm):
    """The events the account console and the required actions write (OTP, passkey, removal,
    password), through the realm's event bus; an error event is no signal."""
    api = Api(realm, token(realm))
    stream = api("post", "streams", {"delivery": {"method": "urn:ietf:rfc:8936"}, "events_requested": ALL_EVENTS}).json()
    alice = user_id(realm, "alice")
    with transaction.atomic():
        realm_events.emit(realm, "UPDATE_TOTP", user_id=alice, details={"credential_type": "otp"})
        realm_events.emit(realm, "UPDATE_CREDENTIAL", user_id=alice, details={"credential_type": "webauthn-passwordless"})
        realm_events.emit(realm, "REMOVE_TOTP", user_id=alice, details={"credential_type": "otp"})
        realm_events.emit(realm, "REMOVE_CREDENTIAL", user_id=alice, details={"credential_type": "otp"})
        realm_events.emit(realm, "UPDATE_PASSWORD_ERROR", user_id=alice, error="invalid_password")
        realm_events.emit(realm, "UPDATE_PASSWORD", user_id=alice)
    got = api("post", f"poll/{stream['stream_id']}", {"returnImmediately": True}).json()["sets"]
    changes = [verified(realm, s, stream)["events"][CAEP + "credential-change"] for s in got.values()]
    assert [(c["credential_type"], c["change_type"], c["initiating_entity"]) for c in changes] == [
        ("app", "create", "user"), ("fido2-platform", "create", "user"), ("app", "delete", "user"),
        ("password", "update", "user")]


def test_an_admin_removing_one_session_revokes_it(realm, admin_token):
    api = Api(realm, token(realm))
    stream = api("post", "streams", {"delivery": {"method": "urn:ietf:rfc:8936"}, "events_requested": ALL_EVENTS}).json()
    grant = HttpClient().post(f"/realms/{realm.name}/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": "app", "client_secret": SECRET, "username": "alice",
        "password": USER_PASSWORD}).json()
    sid = jwt.decode(grant["access_token"], keys(realm)).claims["sid"]
    HttpClient(HTTP_AUTHORIZATION=f"Bearer {admin_token}").delete(f"/admin/realms/{realm.name}/sessions/{sid}")
    got = api("post", f"poll/{stream['stream_id']}", {"returnImmediately": True}).json()["sets"]
    [claims] = [verified(realm, s, stream) for s in got.values()]
    assert claims["sub_id"] == {"format": "complex", "session": {"format": "opaque", "id": sid},
                                "user": {"format": "iss_sub", "iss": stream["iss"], "sub": user_id(realm, "alice")}}
    assert claims["events"][CAEP + "session-revoked"]["initiating_entity"] == "admin"


def test_default_subjects_none_and_subjects_add_and_remove(realm, admin_token):
    api = Api(realm, token(realm, "picky"))
    stream = api("post", "streams", {"delivery": {"method": "urn:ietf:rfc:8936"}, "events_requested": ALL_EVENTS}).json()
    assert stream["format"] == "email" and stream["aud"] == ["https://picky.example/ssf"]
    poll = f"poll/{stream['stream_id']}"
    alice, bob = user_id(realm, "alice"), user_id(realm, "bob")

    def disable_both():
        for uid in (alice, bob):
            admin(admin_token, "put", f"{realm.name}/users/{uid}", {"enabled": False})
            admin(admin_token, "put", f"{realm.name}/users/{uid}", {"enabled": True})

    disable_both()
    assert api("post", poll, {"returnImmediately": True}).json()["sets"] == {}  # NONE: about nobody yet
    subject = {"format": "iss_sub", "iss": stream["iss"], "sub": alice}
    assert api("post", "subjects:add", {"stream_id": stream["stream_id"], "subject": subject}).status_code == 200
    disable_both()
    got = api("post", poll, {"returnImmediately": True}).json()["sets"]
    subjects = [verified(realm, s, stream)["sub_id"] for s in got.values()]
    assert subjects == [{"format": "email", "email": "alice@example.org"}] * 2  # the receiver's format
    api("post", poll, {"ack": list(got), "maxEvents": 0})
    assert api("post", "subjects:remove", {"stream_id": stream["stream_id"], "subject": subject}).status_code == 204
    disable_both()
    assert api("post", poll, {"returnImmediately": True}).json()["sets"] == {}
    bad = api("post", "subjects:add", {"stream_id": stream["stream_id"], "subject": {"format": "iss_sub"}})
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_subject"


def test_paused_stream_holds_events_and_disabled_drops_them(realm, admin_token, push_server):
    api = Api(realm, token(realm))
    stream = push_stream(api, push_server)
    sid, bob = stream["stream_id"], user_id(realm, "bob")
    paused = api("post", "streams/status", {"stream_id": sid, "status": "paused", "reason": "maintenance"})
    assert paused.json() == {"stream_id": sid, "status": "paused", "reason": "maintenance"}
    assert api("get", "streams/status", stream_id=sid).json()["status"] == "paused"
    admin(admin_token, "put", f"{realm.name}/users/{bob}", {"enabled": False})
    send_pending(sid)
    assert push_server.requests == []  # held
    api("post", "streams/status", {"stream_id": sid, "status": "enabled"})
    send_pending(sid)
    assert [next(iter(c["events"])) for c in pushed(realm, push_server, stream)] == [RISC + "account-disabled"]

    api("post", "streams/status", {"stream_id": sid, "status": "paused"})
    admin(admin_token, "put", f"{realm.name}/users/{bob}", {"enabled": True})  # held, then dropped
    api("post", "streams/status", {"stream_id": sid, "status": "disabled"})
    admin(admin_token, "put", f"{realm.name}/users/{bob}", {"enabled": False})  # not even written
    api("post", "streams/status", {"stream_id": sid, "status": "enabled"})
    send_pending(sid)
    assert len(push_server.requests) == 1
    assert Delivery.objects.filter(endpoint__ssf_stream=sid, state=Delivery.FAILED).count() == 1
    assert api("post", "streams/status", {"stream_id": sid, "status": "stopped"}).status_code == 400


def test_risc_push_method_is_a_push(realm, push_server):
    api = Api(realm, token(realm))
    risc_push = "https://schemas.openid.net/secevent/risc/delivery-method/push"
    stream = api("post", "streams", {"delivery": {"method": risc_push, "endpoint_url": push_server.url()},
                                     "events_requested": ALL_EVENTS}).json()
    assert stream["delivery"] == {"method": risc_push, "endpoint_url": push_server.url()}
    api("post", "verify", {"state": "risc"})  # the receiver's one stream when stream_id is left out
    too_soon = api("post", "verify", {"state": "again"})  # min_verification_interval, as Keycloak's 60 s
    assert too_soon.status_code == 429 and too_soon.json()["error"] == "too_many_requests"
    assert stream["min_verification_interval"] == 60
    send_pending(stream["stream_id"])
    [claims] = pushed(realm, push_server, stream)
    assert claims["events"][events.VERIFICATION] == {"state": "risc", "event_timestamp": claims["iat"]}


def test_a_receivers_rfc8935_error_is_logged_and_retried(realm, push_server):
    api = Api(realm, token(realm))
    stream = push_stream(api, push_server)
    push_server.script.append((400, {"Content-Type": "application/json"},
                               b'{"err":"invalid_audience","description":"not for us"}'))
    api("post", "verify", {"stream_id": stream["stream_id"]})
    [sent] = send_pending(stream["stream_id"])
    attempt = DeliveryAttempt.objects.get(delivery_id=sent)
    assert attempt.status == 400 and not attempt.success and "invalid_audience" in attempt.response_body
    retry = Delivery.objects.get(pk=sent)
    assert retry.state == Delivery.PENDING and retry.attempts == 1  # the webhook schedule retries it


def test_the_receivers_signature_algorithm(realm):
    api = Api(realm, token(realm, "ec"))
    stream = api("post", "streams", {"delivery": {"method": "urn:ietf:rfc:8936"}}).json()
    api("post", "verify", {})
    [set_token] = api("post", f"poll/{stream['stream_id']}", {"returnImmediately": True}).json()["sets"].values()
    decoded = jwt.decode(set_token, keys(realm), algorithms=["ES256"])
    assert decoded.header["alg"] == "ES256" and decoded.claims["sub_id"]["id"] == stream["stream_id"]
    refused = Api(realm, token(realm, "hs"))("post", "streams", {"delivery": {"method": "urn:ietf:rfc:8936"}})
    assert refused.status_code == 400 and "HS256" in refused.json()["error_description"]
    refused = Api(realm, token(realm, "odd"))("post", "streams", {"delivery": {"method": "urn:ietf:rfc:8936"}})
    assert refused.status_code == 400 and "phone_number" in refused.json()["error_description"]
    refused = Api(realm, token(realm, "some"))("post", "streams", {"delivery": {"method": "urn:ietf:rfc:8936"}})
    assert refused.status_code == 400 and "SOME" in refused.json()["error_description"]


def test_bearer_token_scope_and_stream_ownership(realm, push_server):
    base = f"/realms/{realm.name}/ssf/transmitter/streams"
    anonymous = HttpClient().get(base)
    assert anonymous.status_code == 401 and anonymous["WWW-Authenticate"] == "Bearer"
    assert HttpClient(HTTP_AUTHORIZATION="Bearer not.a.token").get(base).status_code == 401
    reader = Api(realm, token(realm, scope="ssf.read"))
    assert reader("get", "streams").status_code == 200
    assert reader("post", "streams", {"delivery": {"method": "urn:ietf:rfc:8936"}}).status_code == 401
    assert Api(realm, token(realm, scope="ssf.manage"))("get", "streams").status_code == 401
    assert Api(realm, token(realm, "plain"))("get", "streams").status_code == 403  # no ssf.enabled
    mine = push_stream(Api(realm, token(realm)), push_server)
    other = Api(realm, token(realm, "picky"))
    assert other("get", "streams", stream_id=mine["stream_id"]).status_code == 404
    assert other("get", "streams/status", stream_id=mine["stream_id"]).status_code == 404
    assert other("delete", "streams", stream_id=mine["stream_id"]).status_code == 404
    assert other("post", "verify", {"stream_id": mine["stream_id"]}).status_code == 404
    assert other("post", f"poll/{mine['stream_id']}", {}).status_code == 404
    assert SsfStream.objects.filter(pk=mine["stream_id"]).exists()


@pytest.mark.parametrize("delivery_config, needle", [
    ({"method": "urn:ietf:rfc:8935", "endpoint_url": "http://169.254.169.254/latest"}, "refused"),
    ({"method": "urn:ietf:rfc:8935", "endpoint_url": "http://10.1.2.3/ssf"}, "refused"),
    ({"method": "urn:ietf:rfc:8935"}, "missing delivery endpoint push URL"),
    ({"method": "urn:ietf:rfc:8935", "endpoint_url": "http://127.0.0.1:9/x", "authorization_header": "Bearer x"},
     "authorization_header"),
    ({"method": "urn:example:carrier-pigeon"}, "unsupported delivery method"),
    ({"method": "urn:ietf:rfc:8936", "endpoint_url": "https://elsewhere.example/poll"}, "defined by transmitter"),
])
def test_refused_stream_configurations(realm, delivery_config, needle):
    resp = Api(realm, token(realm))("post", "streams", {"delivery": delivery_config})
    assert resp.status_code == 400 and resp.json()["error"] == "stream_error"
    assert needle in resp.json()["error_description"]
    assert not SsfStream.objects.filter(realm=realm).exists()


def test_settings_are_attributes_in_export_and_import(realm):
    exported = export_realm(realm)
    assert exported["attributes"]["ssf.transmitterEnabled"] == "true"
    picky = next(c for c in exported["clients"] if c["clientId"] == "picky")
    assert picky["attributes"]["ssf.enabled"] == "true" and picky["attributes"]["ssf.defaultSubjects"] == "NONE"
    exported["realm"] = exported["id"] = realm.name + "-copy"
    copy = import_realm(exported).realm
    assert events.transmitter_enabled(copy)
    assert HttpClient().get(f"/realms/{copy.name}/.well-known/ssf-configuration").status_code == 200


def test_a_streams_webhook_is_named_and_only_switched_on_or_off_through_the_webhook_api(realm, admin_token, push_server):
    """The stream's endpoint is listed (its delivery log is useful) as the stream's; changing or
    deleting it through the webhook API would break the stream without a word, so it is refused."""
    stream = push_stream(Api(realm, token(realm)), push_server)
    endpoint_id = SsfStream.objects.get(pk=stream["stream_id"]).endpoint_id
    http = HttpClient(HTTP_AUTHORIZATION=f"Bearer {admin_token}")
    hooks = f"/admin/realms/{realm.name}/webhooks"
    ordinary = http.post(hooks, data=json.dumps({"url": push_server.url(), "eventTypes": ["user.*"]}),
                         content_type="application/json").json()
    listed = {e["id"]: e for e in http.get(hooks).json()}
    owner = "the Shared Signals stream of client receiver (managed through the SSF stream API)"
    assert listed[endpoint_id]["managedBy"] == owner and "managedBy" not in listed[ordinary["id"]]
    got = http.get(f"{hooks}/{endpoint_id}").json()
    assert got == listed[endpoint_id]

    def put(endpoint, body):
        return http.put(f"{hooks}/{endpoint}", data=json.dumps(body), content_type="application/json")

    for key, value in (("eventTypes", ["*"]), ("url", push_server.url() + "other"), ("envelope", "standard")):
        refused = put(endpoint_id, {**got, key: value})
        assert refused.status_code == 400 and refused.json() == {
            "errorMessage": f"This webhook belongs to {owner}: only enabled can be changed here, not {key}"}
    assert put(endpoint_id, {**got, "enabled": False}).status_code == 204  # as after failures: switched back on here
    assert not Endpoint.objects.get(pk=endpoint_id).enabled
    assert put(endpoint_id, {**got, "enabled": True}).status_code == 204 and Endpoint.objects.get(pk=endpoint_id).enabled
    deleted = http.delete(f"{hooks}/{endpoint_id}")
    assert deleted.status_code == 400
    assert deleted.json() == {"errorMessage": f"This webhook belongs to {owner}: it cannot be deleted here"}
    assert Endpoint.objects.get(pk=endpoint_id).event_types == got["eventTypes"]
    assert Api(realm, token(realm))("get", "streams").json()[0]["stream_id"] == stream["stream_id"]
    # An ordinary endpoint: what a GET gave, changed, is PUT back; and it is deleted.
    again = http.get(f"{hooks}/{ordinary['id']}").json()
    assert put(ordinary["id"], {**again, "eventTypes": ["*"]}).status_code == 204
    assert http.delete(f"{hooks}/{ordinary['id']}").status_code == 204
