"""The outbox: realm events become webhook messages in the same transaction; the catalogue."""
import json
import re
from pathlib import Path

import pytest
from django.db import transaction

from realms.audit.events import emit
from realms.models import Event
from webhooks import catalogue, services
from webhooks.models import Delivery, Message

pytestmark = pytest.mark.django_db


def _endpoint(realm, types, enabled=True):
    endpoint, _ = services.create_endpoint(realm, "https://hooks.example.com/in", types, enabled=enabled)
    return endpoint


def test_login_event_becomes_auth_login_with_stable_id_and_payload(realm, monkeypatch, django_capture_on_commit_callbacks):
    auth = _endpoint(realm, ["auth.*"])
    users = _endpoint(realm, ["user.*"])
    everything = _endpoint(realm, [])
    _endpoint(realm, ["auth.*"], enabled=False)
    dispatched = []
    monkeypatch.setattr("webhooks.dispatch.deliveries", lambda ids: dispatched.extend(ids))
    with django_capture_on_commit_callbacks(execute=True):
        event = emit(realm, "LOGIN", user_id="u-1", client_id="app", session_id="s-1", ip_address="203.0.113.9")
    message = Message.objects.get()
    assert re.fullmatch(r"msg_[A-Za-z0-9_-]+", message.id)
    body = json.loads(message.payload)
    assert body["type"] == "auth.login" and body["timestamp"].endswith("Z")
    assert body["data"] == {"realm": "wh-realm", "eventId": event.id, "eventType": "LOGIN", "clientId": "app",
                            "userId": "u-1", "sessionId": "s-1", "ipAddress": "203.0.113.9"}
    targets = set(Delivery.objects.values_list("endpoint_id", flat=True))
    assert targets == {auth.pk, everything.pk} and users.pk not in targets
    assert sorted(dispatched) == sorted(Delivery.objects.values_list("pk", flat=True))


def test_admin_event_becomes_resource_action(realm):
    _endpoint(realm, ["user.created", "client.*"])
    emit(realm, "CREATE", kind=Event.ADMIN, resource_type="USER", resource_path="users/abc")
    emit(realm, "DELETE", kind=Event.ADMIN, resource_type="CLIENT", resource_path="clients/xyz")
    emit(realm, "UPDATE", kind=Event.ADMIN, resource_type="USER", resource_path="users/abc")  # not subscribed
    got = {m.type: json.loads(m.payload)["data"] for m in Message.objects.all()}
    assert set(got) == {"user.created", "client.deleted"}
    assert got["user.created"]["resourceId"] == "abc" and got["client.deleted"]["operationType"] == "DELETE"


def test_rolled_back_change_leaves_no_message(realm):
    _endpoint(realm, ["auth.*"])
    with pytest.raises(RuntimeError):
        with transaction.atomic():
            emit(realm, "LOGIN", user_id="u-1")
            raise RuntimeError("the change fails")
    assert not Message.objects.exists() and not Delivery.objects.exists()


def test_events_outside_the_catalogue_and_unsubscribed_realms_produce_nothing(realm):
    from realms.models import Realm

    _endpoint(realm, [])
    emit(realm, "SOMETHING_NEW", user_id="u")
    emit(Realm.objects.create(name="other"), "LOGIN", user_id="u")
    assert not Message.objects.exists()


def test_error_events_carry_the_error():
    event = Event(type="LOGIN_ERROR", kind=Event.USER, error="invalid_user_credentials", details={"username": "x"})
    assert catalogue.webhook_type(event) == "auth.login_error"
    data = catalogue.payload_data(event, "r")
    assert data["error"] == "invalid_user_credentials" and data["details"] == {"username": "x"}


@pytest.mark.parametrize("kind,type_,resource,expected", [
    (Event.USER, "LOGIN", "", "auth.login"), (Event.USER, "LOGIN_ERROR", "", "auth.login_error"),
    (Event.USER, "CODE_TO_TOKEN", "", "auth.code_to_token"), (Event.USER, "REFRESH_TOKEN", "", "auth.refresh_token"),
    (Event.USER, "LOGOUT", "", "auth.logout"), (Event.ADMIN, "CREATE", "USER", "user.created"),
    (Event.ADMIN, "UPDATE", "USER", "user.updated"), (Event.ADMIN, "DELETE", "USER", "user.deleted"),
    (Event.ADMIN, "CREATE", "CLIENT", "client.created"), (Event.ADMIN, "UPDATE", "REALM_ROLE", "role.updated"),
    (Event.ADMIN, "CREATE", "GROUP_MEMBERSHIP", "group_membership.created"),
    (Event.ADMIN, "UPDATE", "WEBHOOK_ENDPOINT", None), (Event.USER, "NOT_A_TYPE", "", None),
])
def test_catalogue_mapping(kind, type_, resource, expected):
    assert catalogue.webhook_type(Event(kind=kind, type=type_, resource_type=resource)) == expected


def test_catalogue_is_documented():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "webhooks.md").read_text()
    for name in catalogue.USER_EVENTS:
        assert f"`{name}`" in doc and f"`auth.{name.lower()}`" in doc, name
    for resource_type, resource in catalogue.ADMIN_RESOURCES.items():
        assert f"`{resource_type}`" in doc and f"`{resource}`" in doc, resource_type
    assert "`webhook.test`" in doc
