"""Shared Signals streams in realm export and import: the receiver client's attributes carry the
stream as Keycloak 26.7 keeps it (``ssf.streamId``, ``ssf.status``, ``ssf.status_reason``,
``ssf.streamConfig``); an import makes the stream again, with its webhook endpoint, and a push
URL the outbound rules refuse refuses the whole import."""
import json
import uuid

import pytest
from django.db import transaction
from django.test import Client as HttpClient

from oidc.ssf.models import SsfStream
from realms.admin_api.partial import partial_export
from realms.audit import events as realm_events
from realms.models import Client, Realm, User
from realms.representation import RepresentationError, export_realm, import_realm
from realms.representation.partial import partial_import
from tests.oidc.test_ssf import (  # noqa: F401 -- fixtures
    ALL_EVENTS,
    CAEP,
    Api,
    _receiver_client,
    _scope,
    admin_token,
    push_server,
    push_stream,
    pushed,
    realm,
    send_pending,
    ssf_feature,
    token,
)
from webhooks.models import Endpoint

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("outbound_loopback", "ssf_feature")]

STREAM_KEYS = {"ssf.streamId", "ssf.status", "ssf.status_reason", "ssf.streamConfig", "ssf.subjects"}


def _receiver_rep(exported, client_id="receiver"):
    return next(c for c in exported["clients"] if c["clientId"] == client_id)


def _password_changed(realm, username="alice"):
    with transaction.atomic():
        realm_events.emit(realm, "UPDATE_PASSWORD", user_id=User.objects.get(realm=realm, username=username).pk)


def test_round_trip_export_delete_import_and_events_flow_again(realm, push_server):
    api = Api(realm, token(realm))
    stream = push_stream(api, push_server)
    sid = stream["stream_id"]
    alice = User.objects.get(realm=realm, username="alice").pk
    subject = {"format": "opaque", "id": alice}
    api("post", "subjects:add", {"stream_id": sid, "subject": subject})
    api("post", "streams/status", {"stream_id": sid, "status": "paused", "reason": "maintenance"})
    api("post", "streams/status", {"stream_id": sid, "status": "enabled", "reason": "back"})

    exported = export_realm(realm)
    attributes = _receiver_rep(exported)["attributes"]
    assert attributes["ssf.enabled"] == "true"
    assert attributes["ssf.streamId"] == sid and attributes["ssf.status"] == "enabled"
    assert attributes["ssf.status_reason"] == "back"
    config = json.loads(attributes["ssf.streamConfig"])  # Keycloak's StreamConfig, as a JSON string
    assert config == {**stream, "kc_status": "enabled", "kc_status_reason": "back"}
    assert json.loads(attributes["ssf.subjects"]) == [{"subject": subject, "included": True}]
    assert "ssf.streamId" not in _receiver_rep(exported, "picky")["attributes"]  # no stream there

    Realm.objects.get(pk=realm.pk).delete()
    assert not SsfStream.objects.filter(pk=sid).exists() and not Endpoint.objects.filter(url=push_server.url()).exists()
    copy = import_realm(json.loads(json.dumps(exported))).realm
    restored = SsfStream.objects.select_related("client", "endpoint").get(realm=copy)
    assert restored.id == sid and restored.client.client_id == "receiver"
    assert (restored.method, restored.endpoint_url, restored.audience) == (
        "urn:ietf:rfc:8935", push_server.url(), f"receiver/{sid}")
    assert restored.events_requested == ALL_EVENTS and restored.description == "test receiver"
    assert (restored.status, restored.reason) == ("enabled", "back")
    assert restored.subjects == [{"subject": subject, "included": True}]
    assert restored.endpoint.url == push_server.url() and restored.endpoint.envelope == "secevent"
    assert not STREAM_KEYS & set(restored.client.attributes)  # the row holds it, not the attributes
    assert _receiver_rep(export_realm(copy))["attributes"] == attributes  # the same export again

    # The receiver sees its stream as before, and events reach it again.
    assert Api(copy, token(copy))("get", "streams", stream_id=sid).json() == {**stream, "kc_status_reason": "back"}
    _password_changed(copy)
    send_pending(sid)
    [claims] = pushed(copy, push_server, stream)
    assert claims["sub_id"] == {"format": "iss_sub", "iss": stream["iss"], "sub": alice}
    assert CAEP + "credential-change" in claims["events"]


def test_a_keycloak_shaped_stream_imports(push_server):
    """The attributes as Keycloak's ClientStreamStore writes them: a UUID stream id, the status
    in its own attribute, the configuration as compact JSON with Keycloak's issuer."""
    name, sid = "kc" + uuid.uuid4().hex[:8], str(uuid.uuid4())
    config = {"stream_id": sid, "iss": f"https://keycloak.example/realms/{name}", "aud": ["https://rp.example/ssf"],
              "events_supported": ALL_EVENTS, "events_requested": [CAEP + "credential-change"],
              "events_delivered": [CAEP + "credential-change"],
              "delivery": {"method": "urn:ietf:rfc:8935", "endpoint_url": push_server.url()},
              "min_verification_interval": 60, "kc_status": "enabled", "format": "iss_sub"}
    receiver = _receiver_client("receiver", **{"ssf.streamId": sid, "ssf.status": "enabled",
                                               "ssf.streamConfig": json.dumps(config, separators=(",", ":"))})
    realm = import_realm({
        "realm": name, "enabled": True, "attributes": {"ssf.transmitterEnabled": "true"},
        "clientScopes": [_scope("ssf.read"), _scope("ssf.manage")], "clients": [receiver],
        "users": [{"username": "alice", "enabled": True}]}).realm
    stream = Api(realm, token(realm))("get", "streams", stream_id=sid).json()
    assert stream["aud"] == ["https://rp.example/ssf"] and stream["events_delivered"] == [CAEP + "credential-change"]
    assert stream["iss"] == f"https://keycloak.example/realms/{name}"  # no base URL configured: the file's
    assert stream["delivery"] == config["delivery"] and stream["kc_status"] == "enabled"
    _password_changed(realm)
    send_pending(sid)
    [request] = push_server.requests
    assert request["headers"]["Content-Type"] == "application/secevent+jwt"


def _import_with_stream(name, delivery, **attributes):
    config = {"stream_id": str(uuid.uuid4()), "iss": "https://old.example/realms/before", "aud": ["rp"],
              "events_requested": ALL_EVENTS, "delivery": delivery}
    return import_realm({"realm": name, "enabled": True, "clientScopes": [_scope("ssf.read"), _scope("ssf.manage")],
                         "clients": [
        {"clientId": "plain"},
        _receiver_client("receiver", **{"ssf.streamId": config["stream_id"], "ssf.status": "enabled",
                                        "ssf.streamConfig": json.dumps(config), **attributes})]})


@pytest.mark.parametrize("delivery, attributes, needle", [
    ({"method": "urn:ietf:rfc:8935", "endpoint_url": "http://169.254.169.254/latest"}, {}, "endpoint_url refused"),
    ({"method": "urn:ietf:rfc:8935", "endpoint_url": "http://10.1.2.3/ssf"}, {}, "endpoint_url refused"),
    ({"method": "urn:ietf:rfc:8935"}, {}, "missing delivery endpoint push URL"),
    ({"method": "urn:ietf:rfc:8935", "endpoint_url": "http://127.0.0.1:9/x", "authorization_header": "Bearer x"}, {},
     "authorization_header"),
    ({"method": "urn:ietf:rfc:8936"}, {"ssf.status": "stopped"}, "status is enabled, paused or disabled"),
    ({"method": "urn:ietf:rfc:8936"}, {"ssf.streamConfig": "{not json"}, "are JSON"),
    ({"method": "urn:ietf:rfc:8936"}, {"ssf.signatureAlgorithm": "HS256"}, "HS256"),
    ({"method": "urn:ietf:rfc:8936"}, {"ssf.subjects": '[{"subject": {"format": "iss_sub"}, "included": true}]'},
     "subjects is a list"),
])
def test_a_refused_stream_refuses_the_whole_import(delivery, attributes, needle):
    name = "bad" + uuid.uuid4().hex[:8]
    streams, endpoints = SsfStream.objects.count(), Endpoint.objects.count()
    with pytest.raises(RepresentationError) as refused:
        _import_with_stream(name, delivery, **attributes)
    assert "clients[1].attributes" in str(refused.value) and needle in str(refused.value)
    assert not Realm.objects.filter(name=name).exists()
    assert (SsfStream.objects.count(), Endpoint.objects.count()) == (streams, endpoints)


@pytest.mark.parametrize("base_url, issuer_base", [("", "https://old.example"), ("https://idp.example", "https://idp.example")])
def test_a_poll_stream_gets_this_servers_issuer_and_poll_url(settings, base_url, issuer_base):
    """The issuer: the configured base URL's, else the file's host with this realm's name."""
    settings.IDP_BASE_URL = base_url
    name = "poll" + uuid.uuid4().hex[:8]
    realm = _import_with_stream(name, {"method": "urn:ietf:rfc:8936",
                                       "endpoint_url": "https://elsewhere.example/realms/x/ssf/transmitter/poll/1"}).realm
    stream = SsfStream.objects.select_related("endpoint").get(realm=realm)
    assert stream.polled and stream.issuer == f"{issuer_base}/realms/{name}"
    assert stream.endpoint.url == f"{issuer_base}/realms/{name}/ssf/transmitter/poll/{stream.id}"


def test_partial_import_and_export_carry_the_stream(realm, push_server):
    stream = push_stream(Api(realm, token(realm)), push_server)
    exported = partial_export(realm, groups_and_roles=False, clients=True)
    receiver = _receiver_rep(exported)
    assert json.loads(receiver["attributes"]["ssf.streamConfig"])["stream_id"] == stream["stream_id"]

    target = import_realm({"realm": "part" + uuid.uuid4().hex[:8], "enabled": True,
                           "clientScopes": [_scope("ssf.read"), _scope("ssf.manage")]}).realm
    bad = {**receiver, "attributes": {**receiver["attributes"], "ssf.streamConfig": json.dumps(
        {**stream, "delivery": {"method": "urn:ietf:rfc:8935", "endpoint_url": "http://169.254.169.254/"}})}}
    with pytest.raises(RepresentationError, match="endpoint_url refused"):
        partial_import(target, {"ifResourceExists": "FAIL", "clients": [{"clientId": "other"}, bad]})
    assert not Client.objects.filter(realm=target, client_id__in=["other", "receiver"]).exists()

    partial_import(target, {"ifResourceExists": "FAIL", "clients": [receiver]})
    copied = SsfStream.objects.get(realm=target)
    assert copied.id != stream["stream_id"]  # the original still has that id: a new one, as a copy's
    assert copied.endpoint_url == push_server.url() and copied.audience == stream["aud"][0]
    assert HttpClient().get(f"/realms/{target.name}/ssf/transmitter/streams").status_code == 404  # not a transmitter

    # Overwritten: the old stream goes with its client, its webhook endpoint too.
    partial_import(target, {"ifResourceExists": "OVERWRITE", "clients": [receiver]})
    again = SsfStream.objects.get(realm=target)
    assert again.pk != copied.pk and not Endpoint.objects.filter(pk=copied.endpoint_id).exists()
    assert list(Endpoint.objects.filter(realm=target).values_list("pk", flat=True)) == [again.endpoint_id]


def test_the_admin_api_and_registration_refuse_stream_attributes_a_client_update_would_only_store(realm, admin_token):
    """Outside an import the stream is its receiver's to manage: the attributes, kept, would do nothing."""
    http = HttpClient(HTTP_AUTHORIZATION=f"Bearer {admin_token}")
    receiver = Client.objects.get(realm=realm, client_id="receiver")
    for key in ("ssf.streamConfig", "ssf.streamId", "ssf.subjects"):
        created = http.post(f"/admin/realms/{realm.name}/clients", data=json.dumps(
            {"clientId": "new-" + key, "attributes": {key: "{}"}}), content_type="application/json")
        assert created.status_code == 400 and key in created.json()["errorMessage"], created.content
        updated = http.put(f"/admin/realms/{realm.name}/clients/{receiver.pk}", data=json.dumps(
            {"clientId": "receiver", "attributes": {"ssf.enabled": "true", key: "{}"}}), content_type="application/json")
        assert updated.status_code == 400 and key in updated.json()["errorMessage"], updated.content
    # Client registration (Keycloak's default provider) parses a ClientRepresentation the same way.
    iat = http.post(f"/admin/realms/{realm.name}/clients-initial-access", data=json.dumps({"count": 1}),
                    content_type="application/json").json()["token"]
    registered = HttpClient(HTTP_AUTHORIZATION=f"Bearer {iat}").post(
        f"/realms/{realm.name}/clients-registrations/default", content_type="application/json",
        data=json.dumps({"clientId": "new-registered", "attributes": {"ssf.streamConfig": "{}"}}))
    assert registered.status_code == 400 and registered.json()["error"] == "invalid_client_metadata"
    assert "ssf.streamConfig" in registered.json()["error_description"]
    assert not Client.objects.filter(realm=realm, client_id__startswith="new-").exists()
    assert not {"ssf.streamConfig", "ssf.streamId", "ssf.subjects"} & set(Client.objects.get(pk=receiver.pk).attributes)


def test_admin_api_get_modify_put_round_trip_keeps_the_stream_and_refuses_changing_it(realm, admin_token, push_server):
    """As Keycloak 26.7's admin clients see a receiver: the stream in its attributes, sent back unchanged."""
    stream = push_stream(Api(realm, token(realm)), push_server)
    http = HttpClient(HTTP_AUTHORIZATION=f"Bearer {admin_token}")
    receiver = Client.objects.get(realm=realm, client_id="receiver")
    url = f"/admin/realms/{realm.name}/clients/{receiver.pk}"
    got = http.get(url).json()
    exported = _receiver_rep(export_realm(realm))
    assert {k: got["attributes"][k] for k in STREAM_KEYS & set(got["attributes"])} == {
        k: exported["attributes"][k] for k in STREAM_KEYS & set(exported["attributes"])}  # one function for both
    assert got["attributes"]["ssf.streamId"] == stream["stream_id"] and got["attributes"]["ssf.status"] == "enabled"
    assert json.loads(got["attributes"]["ssf.streamConfig"])["delivery"]["endpoint_url"] == push_server.url()
    listed = http.get(f"/admin/realms/{realm.name}/clients", {"clientId": "receiver"}).json()
    assert listed[0]["attributes"]["ssf.streamId"] == stream["stream_id"]
    row = SsfStream.objects.values().get(pk=stream["stream_id"])

    put = http.put(url, data=json.dumps({**got, "description": "changed by an admin"}), content_type="application/json")
    assert put.status_code == 204, put.content
    receiver.refresh_from_db()
    assert receiver.description == "changed by an admin"
    assert not STREAM_KEYS & set(receiver.attributes)  # the row stays the one truth
    assert SsfStream.objects.values().get(pk=stream["stream_id"]) == row
    assert http.get(url).json()["attributes"]["ssf.streamConfig"] == got["attributes"]["ssf.streamConfig"]

    moved = json.loads(got["attributes"]["ssf.streamConfig"])
    moved["delivery"]["endpoint_url"] = "http://169.254.169.254/"
    for key, value in (("ssf.streamConfig", json.dumps(moved)), ("ssf.status", "paused")):
        refused = http.put(url, data=json.dumps({**got, "description": "again",
                                                 "attributes": {**got["attributes"], key: value}}),
                           content_type="application/json")
        assert refused.status_code == 400, refused.content
        assert refused.json() == {"errorMessage": f"attributes: {key} cannot be changed here: it belongs to the Shared "
                                                  "Signals stream, which its receiver manages through the SSF stream API"}
    receiver.refresh_from_db()
    assert receiver.description == "changed by an admin"
    assert SsfStream.objects.values().get(pk=stream["stream_id"]) == row


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("fresh_caches")
def test_keycloaks_admin_client_reads_a_receiver_and_writes_it_back(live_server):
    """python-keycloak's KeycloakAdmin (Keycloak's admin client for Python) against the running
    server: get_client shows the stream's attributes, update_client with them unchanged keeps the
    stream, update_client changing one is refused."""
    from keycloak import KeycloakAdmin
    from keycloak.exceptions import KeycloakPutError

    from oidc.ssf import streams
    from realms.representation.services import create_realm
    from tests.browser import master_admin

    master_admin("root-pass-1")
    realm = create_realm("kc" + uuid.uuid4().hex[:8])
    rx = Client.objects.create(realm=realm, client_id="rx", service_accounts_enabled=True,
                               attributes={"ssf.enabled": "true"})
    stream = streams.create(rx, f"{live_server.url}/realms/{realm.name}", {"delivery": {"method": "urn:ietf:rfc:8936"}})
    admin = KeycloakAdmin(server_url=live_server.url + "/", username="root", password="root-pass-1",
                          realm_name=realm.name, user_realm_name="master")
    got = admin.get_client(rx.pk)
    assert got["attributes"]["ssf.streamId"] == stream.id and got["attributes"]["ssf.status"] == "enabled"
    row = SsfStream.objects.values().get(pk=stream.id)
    admin.update_client(rx.pk, {**got, "description": "seen by Keycloak's admin client"})
    assert admin.get_client(rx.pk)["attributes"] == got["attributes"]
    assert Client.objects.get(pk=rx.pk).description == "seen by Keycloak's admin client"
    with pytest.raises(KeycloakPutError) as refused:
        admin.update_client(rx.pk, {**got, "attributes": {**got["attributes"], "ssf.status": "disabled"}})
    assert refused.value.response_code == 400 and b"ssf.status cannot be changed here" in refused.value.response_body
    assert SsfStream.objects.values().get(pk=stream.id) == row
