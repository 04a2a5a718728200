"""Event-type schemas: every body the outbox writes, for every event type, payload kind and
envelope, validates against its published JSON Schema; the schemas and the AsyncAPI document are
served by the Admin API and the console, and docs/asyncapi.json is the current document."""
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client as HttpClient
from jsonschema import Draft202012Validator, ValidationError

from realms.models import Client, ClientScope, Event, Group, Role
from realms.users.accounts import create_user
from webhooks import catalogue, payloads, schemas, services
from webhooks.models import Message
from webhooks.outbox import publish

from .test_admin import console  # noqa: F401  (fixture: a console session of a master-realm admin)
from .test_rest import api, tokens  # noqa: F401  (fixtures: a master-realm admin's bearer token)

pytestmark = pytest.mark.django_db

ASYNCAPI = Path(__file__).resolve().parents[2] / "docs" / "asyncapi.json"
FORMATS = ["", "thin+ce", "fat.v1", "fat.v1+ce"]


def _validator(schema):
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


@pytest.fixture
def objects(realm):
    client = Client.objects.create(realm=realm, client_id="crm")
    client.set_secret("a-client-secret-value")
    client.save()
    return {
        "user": create_user(realm, "ada", email="ada@example.org"),
        "client": client,
        "group": Group.objects.create(realm=realm, name="staff"),
        "role": Role.objects.create(realm=realm, name="reader"),
        "client_role": Role.objects.create(realm=realm, client=client, name="editor"),
        "client_scope": ClientScope.objects.create(realm=realm, name="crm-scope", protocol="openid-connect"),
    }


def _event(realm, event_type, objects):
    """A realm Event of ``event_type`` about one of ``objects`` (unsaved: the outbox reads it as
    the ``realm_event`` listener does)."""
    resource, _, action = event_type.partition(".")
    if resource == "auth":
        name = next(n for n in catalogue.USER_EVENTS if n.lower() == action)
        return Event(realm=realm, kind=Event.USER, type=name, user_id=objects["user"].pk, client_id="crm",
                     error="invalid_grant" if name.endswith("_ERROR") else "", details={"username": "ada"})
    resource_type = next(k for k, v in catalogue.ADMIN_RESOURCES.items() if v == resource)
    operation = next(k for k, v in catalogue.ADMIN_OPERATIONS.items() if v == action)
    paths = {"user": f"users/{objects['user'].pk}", "client": f"clients/{objects['client'].pk}",
             "group": f"groups/{objects['group'].pk}", "role": "roles/reader",
             "client_role": f"clients/{objects['client'].pk}/roles/editor",
             "client_scope": f"client-scopes/{objects['client_scope'].pk}", "realm": ""}
    return Event(realm=realm, kind=Event.ADMIN, type=operation, resource_type=resource_type,
                 resource_path=paths.get(resource, f"{resource}/some-id"))


def _endpoints(realm):
    return [services.create_endpoint(realm, f"https://hooks.example.com/{i}", [], payload=kind, envelope=envelope)[0]
            for i, (kind, envelope) in enumerate([("thin", "standard"), ("thin", "cloudevents"),
                                                  ("fat", "standard"), ("fat", "cloudevents")])]


def test_every_emitted_body_validates_against_its_schema(realm, objects):
    endpoints = _endpoints(realm)
    assert sorted(e.payload_format for e in endpoints) == sorted(FORMATS)
    carried = set()
    for event_type in catalogue.emitted_types():
        if event_type == catalogue.TEST_EVENT_TYPE:
            message = publish(realm, event_type, {"realm": realm.name, "endpointId": endpoints[0].pk},
                              endpoints=endpoints)
        else:
            event = _event(realm, event_type, objects)
            assert catalogue.webhook_type(event) == event_type
            message = publish(realm, event_type, catalogue.payload_data(event, realm.name), endpoints=endpoints,
                              event=event)
        for fmt in FORMATS:
            kind, version, envelope = payloads.parse_format(fmt)
            body = json.loads(payloads.body_of(message.payload, message.bodies, fmt))
            _validator(schemas.body_schema(event_type, kind, version, envelope)).validate(body)
            if kind == "fat" and body["data"]["representation"] is not None:
                carried.add(catalogue.object_kind(event_type, version).name)
    # Every kind of object v1 carries was emitted and checked, not only nulls.
    assert carried == {k.name for k in catalogue.VERSIONS["v1"].objects.values()}
    assert Message.objects.count() == len(catalogue.emitted_types())
    assert "a-client-secret-value" not in "".join(Message.objects.values_list("bodies", flat=True))


def test_schemas_refuse_a_body_of_another_type_or_shape(realm, objects):
    endpoints = _endpoints(realm)
    event = _event(realm, "user.updated", objects)
    message = publish(realm, "user.updated", catalogue.payload_data(event, realm.name), endpoints=endpoints, event=event)
    fat = json.loads(payloads.body_of(message.payload, message.bodies, "fat.v1"))
    validator = _validator(schemas.body_schema("user.updated", "fat", "v1"))
    validator.validate(fat)
    with pytest.raises(ValidationError):
        _validator(schemas.body_schema("client.updated", "fat", "v1")).validate(fat)  # another type
    with pytest.raises(ValidationError):
        validator.validate({**fat, "data": {**fat["data"], "representation": {"id": 5}}})  # not a user
    with pytest.raises(ValidationError):
        validator.validate({**fat, "payloadVersion": "v2"})
    ce = json.loads(payloads.body_of(message.payload, message.bodies, "thin+ce"))
    with pytest.raises(ValidationError):
        _validator(schemas.body_schema("user.updated", envelope="cloudevents")).validate({**ce, "specversion": "0.3"})


def test_the_api_serves_event_types_and_their_schemas(realm, api, tokens):  # noqa: F811
    resp = api("get", "/event-types")
    assert resp.status_code == 200
    body = resp.json()
    assert [t["name"] for t in body["eventTypes"]] == catalogue.emitted_types()
    by_name = {t["name"]: t for t in body["eventTypes"]}
    assert by_name["auth.login"]["payloadVersions"] == {"v1": {"representation": "UserRepresentation"}}
    assert by_name["session.deleted"]["payloadVersions"] == {"v1": {"representation": None}}
    assert body["payloadVersions"][0]["version"] == "v1" and body["payloadVersions"][0]["latest"] is True
    assert body["payloadVersions"][0]["representations"]["client"] == "ClientRepresentation"

    resp = api("get", "/event-types/client.updated/schema?kind=fat&version=v1&envelope=cloudevents")
    assert resp.status_code == 200 and resp.json() == schemas.body_schema("client.updated", "fat", "v1", "cloudevents")
    assert resp.json()["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert api("get", "/event-types/client.updated/schema").json() == schemas.body_schema("client.updated")
    missing = api("get", "/event-types/nope.never/schema")
    assert missing.status_code == 404 and missing.json() == {"error": "Event type not found."}
    bad = api("get", "/event-types/client.updated/schema?kind=medium")
    assert bad.status_code == 400 and bad.json() == {"errorMessage": "payload is thin or fat"}
    assert api("get", "/event-types/client.updated/schema?kind=fat&version=v7").status_code == 400

    resp = api("get", "/asyncapi")
    assert resp.status_code == 200 and resp.json() == schemas.asyncapi()
    plain = HttpClient(HTTP_AUTHORIZATION=f"Bearer {tokens['plain']}")
    assert plain.get("/admin/realms/wh-realm/webhooks/event-types").status_code == 403


def test_endpoint_representation_carries_the_payload_settings(realm, api):  # noqa: F811
    resp = api("post", "", {"url": "https://hooks.example.com/in", "payload": "fat", "envelope": "cloudevents"})
    assert resp.status_code == 201, resp.content
    created = resp.json()
    assert (created["payload"], created["payloadVersion"], created["envelope"]) == ("fat", "v1", "cloudevents")
    resp = api("put", f"/{created['id']}", {"payload": "thin", "payloadVersion": None})
    assert resp.status_code == 204
    got = api("get", f"/{created['id']}").json()
    assert (got["payload"], got["payloadVersion"], got["envelope"]) == ("thin", None, "cloudevents")
    refused = api("put", f"/{created['id']}", {"payloadVersion": "v1"})
    assert refused.status_code == 400
    assert refused.json() == {"errorMessage": "payloadVersion applies to fat payloads only"}
    assert api("post", "", {"url": "https://hooks.example.com/in", "envelope": "xml"}).json() == {
        "errorMessage": "envelope is standard or cloudevents"}


def test_asyncapi_document_covers_the_catalogue_and_the_committed_copy_is_current(capsys):
    doc = schemas.asyncapi()
    assert doc["asyncapi"] == "3.0.0"
    assert {c["address"] for c in doc["channels"].values()} == set(catalogue.emitted_types())
    for key, channel in doc["channels"].items():
        assert len(channel["messages"]) == 4  # thin and fat v1, each in both envelopes
        for ref in channel["messages"].values():
            message = doc["components"]["messages"][ref["$ref"].rsplit("/", 1)[1]]
            schema = message["payload"]["schema"]
            Draft202012Validator.check_schema(schema)
            assert channel["address"] in schema["properties"]["type"]["enum"]
        assert doc["operations"][f"send_{key}"]["channel"] == {"$ref": f"#/channels/{key}"}
    call_command("webhooks_asyncapi")
    printed = json.loads(capsys.readouterr().out)
    assert printed == doc
    assert json.loads(ASYNCAPI.read_text()) == doc, "run: manage.py webhooks_asyncapi > docs/asyncapi.json"


def test_console_links_and_serves_the_schemas(realm, console):  # noqa: F811
    admin_client = console
    endpoint, _ = services.create_endpoint(realm, "https://hooks.example.com/in", ["user.updated"], payload="fat")
    page = admin_client.get(f"/admin/master/console/webhooks/endpoint/{endpoint.pk}/change/")
    assert page.status_code == 200
    text = page.content.decode()
    link = "/admin/master/console/webhooks/endpoint/event-types/user.updated/schema.json?kind=fat&amp;version=v1"
    assert link in text and "/admin/master/console/webhooks/endpoint/asyncapi.json" in text
    schema = admin_client.get(link.replace("&amp;", "&") + "&envelope=standard")
    assert schema.status_code == 200 and schema.json() == schemas.body_schema("user.updated", "fat", "v1")
    assert admin_client.get("/admin/master/console/webhooks/endpoint/event-types/no.such/schema.json").status_code == 404
    assert admin_client.get("/admin/master/console/webhooks/endpoint/asyncapi.json").json() == schemas.asyncapi()
    assert "/admin/master/console/webhooks/endpoint/event-types.json" in text
    listing = admin_client.get("/admin/master/console/webhooks/endpoint/event-types.json").json()
    assert listing["payloadVersions"] == catalogue.version_catalogue() and listing["eventTypes"] == schemas.event_types()
