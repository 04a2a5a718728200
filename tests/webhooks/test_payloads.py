"""The payload each endpoint asks for: thin (unchanged bytes), fat (the object as the Admin API
represents it when the event was written, secrets left out, versioned), the CloudEvents envelope,
the size cap, and a second payload version beside the first. Delivered to a real loopback
receiver and checked with the Standard Webhooks and CloudEvents libraries."""
import json
import re

import pytest
import standardwebhooks
from cloudevents.http import from_http, from_json
from django.db import connection
from django.test.utils import CaptureQueriesContext

from realms.audit.events import emit
from realms.models import Client, Event
from realms.users.accounts import create_user
from webhooks import catalogue, conf, delivery, payloads, services
from webhooks.catalogue import ObjectKind, PayloadVersion
from webhooks.models import Delivery, Message

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]


@pytest.fixture
def no_dispatch(monkeypatch):
    monkeypatch.setattr("webhooks.dispatch.deliveries", lambda ids: None)


def _endpoint(realm, url, types=("user.*",), **settings):
    endpoint, secret = services.create_endpoint(realm, url, list(types), **settings)
    endpoint.plain_secret = secret
    return endpoint


def _send_all():
    for d in Delivery.objects.filter(state=Delivery.PENDING).order_by("pk"):
        delivery.attempt(d.pk)


def _received(receiver_server, endpoint):
    """The verified bodies the receiver got, checked with the endpoint's secret."""
    out = []
    for req in receiver_server.requests:
        try:
            standardwebhooks.Webhook(endpoint.plain_secret).verify(req["body"], req["headers"])
        except standardwebhooks.WebhookVerificationError:
            continue
        out.append(req)
    return out


def _user_update(realm, user):
    return emit(realm, "UPDATE", kind=Event.ADMIN, resource_type="USER", resource_path=f"users/{user.pk}")


def test_thin_default_sends_the_same_bytes_as_before_and_costs_no_more_queries(realm, no_dispatch):
    endpoint = _endpoint(realm, "https://hooks.example.com/in", types=[])
    assert (endpoint.payload, endpoint.payload_version, endpoint.envelope) == ("thin", "", "standard")
    emit(realm, "LOGIN", user_id="u-0")  # the per-process endpoint copy is warm
    with CaptureQueriesContext(connection) as queries:
        event = emit(realm, "LOGIN", user_id="u-1", client_id="app")
    # Measured before payloads could be chosen: the event, the endpoints, the message, the deliveries.
    assert len(queries.captured_queries) == 4
    assert not any("realms_user" in q["sql"] for q in queries.captured_queries)
    message = Message.objects.get(source_event_id=event.id)
    old_shape = {"type": "auth.login", "timestamp": event.time.isoformat().replace("+00:00", "Z"),
                 "data": catalogue.payload_data(event, realm.name)}
    assert message.payload == json.dumps(old_shape, separators=(",", ":"), ensure_ascii=False)
    assert message.bodies == "" and Delivery.objects.get(message=message).format == ""


def test_fat_payload_is_the_object_at_the_events_time_with_its_version(realm, receiver_server, no_dispatch):
    thin = _endpoint(realm, receiver_server.url(), ["user.updated"])
    fat = _endpoint(realm, receiver_server.url(), ["user.updated"], payload="fat")
    assert fat.payload_version == "v1"  # the latest, pinned
    user = create_user(realm, "ada", email="ada@example.org", first_name="Ada")
    with CaptureQueriesContext(connection) as queries:
        _user_update(realm, user)
    assert any("realms_user" in q["sql"] for q in queries.captured_queries)  # the snapshot, taken now
    user.first_name = "Changed later"
    user.save()
    _send_all()
    got = {r["headers"].get("webhook-payload-version"): json.loads(r["body"]) for r in receiver_server.requests}
    assert set(got) == {None, "v1"}
    fat_body = got["v1"]
    assert fat_body["payload"] == "fat" and fat_body["payloadVersion"] == "v1" and "truncated" not in fat_body
    rep = fat_body["data"]["representation"]
    assert rep["id"] == user.pk and rep["username"] == "ada" and rep["firstName"] == "Ada"
    assert fat_body["data"]["resourceId"] == user.pk
    assert "representation" not in got[None]["data"] and "payload" not in got[None]
    assert len(_received(receiver_server, fat)) == 1 and len(_received(receiver_server, thin)) == 1


def test_fat_payloads_never_carry_secrets(realm, no_dispatch):
    _endpoint(realm, "https://hooks.example.com/in", ["client.*", "user.*", "realm.*"], payload="fat")
    client = Client.objects.create(realm=realm, client_id="crm", public_client=False,
                                   attributes={"client.secret.rotated": "old-rotated-secret-value"})
    client.set_secret("client-secret-value-123")
    client.save()
    user = create_user(realm, "grace", password="Password-value-9!")
    realm.smtp_server = {"host": "smtp.example.org", "password": "smtp-password-value"}
    realm.save()
    emit(realm, "UPDATE", kind=Event.ADMIN, resource_type="CLIENT", resource_path=f"clients/{client.pk}")
    _user_update(realm, user)
    emit(realm, "UPDATE", kind=Event.ADMIN, resource_type="REALM", resource_path="")
    bodies = {m.type: json.loads(m.bodies)["fat.v1"] for m in Message.objects.all()}
    assert set(bodies) == {"client.updated", "user.updated", "realm.updated"}
    client_rep = json.loads(bodies["client.updated"])["data"]["representation"]
    assert client_rep["clientId"] == "crm" and "secret" not in client_rep
    realm_rep = json.loads(bodies["realm.updated"])["data"]["representation"]
    assert realm_rep["smtpServer"] == {"host": "smtp.example.org"}
    # Named after secrets, holding none: kept.
    assert realm_rep["resetCredentialsFlow"] == "reset credentials" and "requiredCredentials" in realm_rep
    assert "credentials" not in json.loads(bodies["user.updated"])["data"]["representation"]
    everything = "".join(bodies.values())
    for secret in ("client-secret-value-123", "old-rotated-secret-value", "smtp-password-value", "Password-value-9!",
                   "$argon2", "pbkdf2"):
        assert secret not in everything


def test_cloudevents_envelope_thin_and_fat_parsed_by_the_sdk(realm, receiver_server, no_dispatch):
    ce_thin = _endpoint(realm, receiver_server.url(), ["user.updated"], envelope="cloudevents")
    ce_fat = _endpoint(realm, receiver_server.url(), ["user.updated"], payload="fat", envelope="cloudevents")
    user = create_user(realm, "lin")
    _user_update(realm, user)
    _send_all()
    requests = _received(receiver_server, ce_thin) + _received(receiver_server, ce_fat)
    assert len(requests) == 2  # each verifies with its own endpoint's secret only
    events = {}
    for req in requests:
        assert req["headers"]["Content-Type"] == "application/cloudevents+json"
        event = from_http(req["headers"], req["body"])
        assert event == from_json(req["body"])
        assert event["id"] == req["headers"]["webhook-id"] and event["specversion"] == "1.0"
        assert event["source"].endswith("/realms/wh-realm") and event["type"] == "user.updated"
        assert event["datacontenttype"] == "application/json" and event["time"]
        events[req["headers"].get("webhook-payload-version")] = event
    assert set(events) == {None, "v1"}
    assert events["v1"]["payloadversion"] == "v1" and events["v1"]["payload"] == "fat"
    assert events["v1"].data["representation"]["username"] == "lin"
    assert "representation" not in events[None].data and events[None].data["resourceId"] == user.pk


def test_a_snapshot_over_the_limit_is_sent_thin_and_flagged(realm, receiver_server, no_dispatch):
    fat = _endpoint(realm, receiver_server.url(), ["user.updated"], payload="fat")
    big = create_user(realm, "big", attributes={"blob": ["x" * 30_000]})
    small = create_user(realm, "small", attributes={"blob": ["x" * 100]})
    _user_update(realm, big)
    _user_update(realm, small)
    _send_all()
    got = {json.loads(r["body"])["data"]["resourceId"]: r for r in _received(receiver_server, fat)}
    cut = json.loads(got[big.pk]["body"])
    assert conf.get("IDP_WEBHOOK_PAYLOAD_LIMIT") == 20480 and len(got[big.pk]["body"]) < 20480
    assert cut["truncated"] is True and cut["payload"] == "thin" and cut["payloadVersion"] == "v1"
    assert "representation" not in cut["data"] and got[big.pk]["headers"]["webhook-payload-version"] == "v1"
    whole = json.loads(got[small.pk]["body"])
    assert whole["payload"] == "fat" and whole["data"]["representation"]["attributes"]["blob"] == ["x" * 100]


def test_the_limit_is_a_setting(realm, no_dispatch, settings):
    settings.IDP_WEBHOOK_PAYLOAD_LIMIT = 300
    _endpoint(realm, "https://hooks.example.com/in", ["user.updated"], payload="fat")
    _user_update(realm, create_user(realm, "tiny"))
    body = json.loads(json.loads(Message.objects.get().bodies)["fat.v1"])
    assert body.get("truncated") is True


def test_a_second_version_leaves_endpoints_on_the_first_alone(realm, no_dispatch, monkeypatch):
    on_v1 = _endpoint(realm, "https://hooks.example.com/v1", ["user.updated"], payload="fat")
    loads = []

    def load(event):
        loads.append(event.id)
        return catalogue.VERSIONS["v1"].objects["user"].load(event)

    v2_user = ObjectKind("UserRepresentationV2", load, lambda u: {"id": u.pk, "login": u.username},
                         {"type": "object", "required": ["id", "login"]})
    monkeypatch.setitem(catalogue.VERSIONS, "v2", PayloadVersion("v2", "renames username", {"user": v2_user}))
    on_v2 = _endpoint(realm, "https://hooks.example.com/v2", ["user.updated"], payload="fat")
    also_v2 = _endpoint(realm, "https://hooks.example.com/v2b", ["user.updated"], payload="fat",
                        payload_version="v2", envelope="cloudevents")
    assert (on_v1.payload_version, on_v2.payload_version, also_v2.payload_version) == ("v1", "v2", "v2")
    user = create_user(realm, "kay")
    _user_update(realm, user)
    assert len(loads) == 1  # one snapshot per message and version, whatever the envelopes
    message = Message.objects.get()
    formats = dict(Delivery.objects.filter(message=message).values_list("endpoint_id", "format"))
    assert formats == {on_v1.pk: "fat.v1", on_v2.pk: "fat.v2", also_v2.pk: "fat.v2+ce"}
    bodies = {k: json.loads(v) for k, v in json.loads(message.bodies).items()}
    assert bodies["fat.v1"]["data"]["representation"]["username"] == "kay"
    assert bodies["fat.v2"]["data"]["representation"] == {"id": user.pk, "login": "kay"}
    assert bodies["fat.v2+ce"]["data"]["representation"] == {"id": user.pk, "login": "kay"}
    on_v1.refresh_from_db()
    assert on_v1.payload_version == "v1" and catalogue.latest_version() == "v2"


def test_a_deleted_object_and_a_test_event_carry_no_representation(realm, no_dispatch):
    endpoint = _endpoint(realm, "https://hooks.example.com/in", ["user.*", "webhook.test"], payload="fat")
    user = create_user(realm, "gone")
    emit(realm, "DELETE", kind=Event.ADMIN, resource_type="USER", resource_path=f"users/{user.pk}")
    services.send_test_event(endpoint)
    for message in Message.objects.all():
        body = json.loads(json.loads(message.bodies)["fat.v1"])
        assert body["payload"] == "fat" and body["data"]["representation"] is None


def test_redelivery_keeps_the_format_and_bytes(realm, receiver_server, no_dispatch):
    fat = _endpoint(realm, receiver_server.url(), ["user.updated"], payload="fat", envelope="cloudevents")
    _user_update(realm, create_user(realm, "rey"))
    _send_all()
    message = Message.objects.get()
    services.redeliver_event(fat, message.pk)
    _send_all()
    first, second = _received(receiver_server, fat)
    assert first["body"] == second["body"] == payloads.body_of(message.payload, message.bodies, "fat.v1+ce").encode()


@pytest.mark.parametrize("settings_, error", [
    ({"payload": "medium"}, "payload is thin or fat"),
    ({"envelope": "xml"}, "envelope is standard or cloudevents"),
    ({"payload": "fat", "payload_version": "v9"}, "unknown payloadVersion 'v9' (known: v1)"),
    ({"payload": "fat", "payload_version": ["v1"]}, "unknown payloadVersion ['v1'] (known: v1)"),
    ({"payload_version": "v1"}, "payloadVersion applies to fat payloads only"),
])
def test_unknown_settings_are_refused(realm, settings_, error):
    with pytest.raises(services.WebhookError, match=re.escape(error)):
        services.create_endpoint(realm, "https://hooks.example.com/in", [], **settings_)


def test_updates_switch_kind_and_keep_or_drop_the_version(realm):
    endpoint = _endpoint(realm, "https://hooks.example.com/in")
    services.update_endpoint(endpoint, payload="fat")
    assert (endpoint.payload, endpoint.payload_version) == ("fat", "v1")
    services.update_endpoint(endpoint, envelope="cloudevents")
    assert (endpoint.payload_version, endpoint.payload_format) == ("v1", "fat.v1+ce")
    services.update_endpoint(endpoint, payload="thin")
    assert (endpoint.payload, endpoint.payload_version, endpoint.payload_format) == ("thin", "", "thin+ce")
    with pytest.raises(services.WebhookError, match="payloadVersion applies to fat payloads only"):
        services.update_endpoint(endpoint, payload_version="v1")
