"""The admin console pages for webhooks: add (secret shown once), actions, log, redelivery."""
import pytest
from django.test import Client

from realms.models import Realm, Role, User
from webhooks import services
from webhooks.models import Delivery, Endpoint, Message

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]


@pytest.fixture
def console(realm):
    master = Realm.objects.get(name="master")
    admin = User.objects.create(realm=master, username="console-admin")
    admin.roles.add(Role.objects.get(realm=master, client=None, name="admin"))
    client = Client()
    client.force_login(admin)
    client.get(f"/admin/master/console/webhooks/endpoint/?realm__id__exact={realm.pk}")  # make it the current realm
    return client


def test_add_endpoint_shows_the_secret_once(console, realm):
    resp = console.post("/admin/master/console/webhooks/endpoint/add/", {
        "url": "https://hooks.example.com/in", "description": "crm", "event_types": ["user.*", "auth.login"],
        "enabled": "on", "rate_limit": "0", "max_concurrency": "10"}, follow=True)
    assert resp.status_code == 200
    endpoint = Endpoint.objects.get(realm=realm)
    assert endpoint.event_types == ["user.*", "auth.login"]
    shown = [str(m) for m in resp.context["messages"] if "whsec_" in str(m)]
    assert len(shown) == 1 and endpoint.secrets.get().secret in shown[0]


def test_add_refuses_bad_url_and_unknown_types(console, realm, settings):
    settings.IDP_OUTBOUND_ALLOW_HTTP = False
    resp = console.post("/admin/master/console/webhooks/endpoint/add/", {
        "url": "http://hooks.example.com/in", "event_types": "nope.never", "enabled": "on",
        "rate_limit": "0", "max_concurrency": "10"})
    assert resp.status_code == 200 and not Endpoint.objects.exists()
    errors = resp.context["adminform"].form.errors
    assert "url" in errors and "event_types" in errors


def test_actions_and_log_pages(console, realm, monkeypatch):
    monkeypatch.setattr("webhooks.dispatch.deliveries", lambda ids: None)
    endpoint, _ = services.create_endpoint(realm, "https://hooks.example.com/in", [])
    resp = console.post("/admin/master/console/webhooks/endpoint/",
                        {"action": "send_test_event", "_selected_action": [endpoint.pk]}, follow=True)
    assert resp.status_code == 200 and Message.objects.filter(type="webhook.test").count() == 1
    console.post("/admin/master/console/webhooks/endpoint/", {"action": "rotate_secret_now", "_selected_action": [endpoint.pk]})
    assert len(endpoint.active_secrets()) == 1 and endpoint.secrets.count() == 1
    message = Message.objects.get()
    Delivery.objects.filter(message=message).update(state=Delivery.FAILED)
    console.post("/admin/master/console/webhooks/message/", {"action": "redeliver", "_selected_action": [message.pk]})
    assert Delivery.objects.get(message=message).state == Delivery.PENDING
    for page in ("endpoint", "message", "delivery", "deliveryattempt"):
        assert console.get(f"/admin/master/console/webhooks/{page}/").status_code == 200, page
    assert console.get(f"/admin/master/console/webhooks/endpoint/{endpoint.pk}/change/").status_code == 200


def test_the_delivery_log_shows_times_in_the_consoles_one_format(console, realm):
    from django.utils import timezone

    from realms.admin.names import when
    from webhooks.models import DeliveryAttempt

    endpoint, _ = services.create_endpoint(realm, "https://hooks.example.com/in", [])
    at = timezone.now().replace(microsecond=0)
    message = Message.objects.create(realm=realm, type="webhook.test", payload="{}")
    delivery = Delivery.objects.create(message=message, endpoint=endpoint, next_attempt_at=at)
    DeliveryAttempt.objects.create(delivery=delivery, message_id=message.pk, endpoint=endpoint, number=1, started_at=at,
                                   status=500, success=False, duration_ms=3)
    for page in ("delivery", "deliveryattempt"):
        text = console.get(f"/admin/master/console/webhooks/{page}/").content.decode()
        assert when(at, realm) in text, page


def test_console_changes_are_admin_events(console, realm):
    from realms.models import Event

    console.post("/admin/master/console/webhooks/endpoint/add/", {
        "url": "https://hooks.example.com/in", "enabled": "on", "rate_limit": "0",
        "max_concurrency": "10"})
    endpoint = Endpoint.objects.get(realm=realm)
    console.post(f"/admin/master/console/webhooks/endpoint/{endpoint.pk}/change/", {
        "url": "https://hooks.example.com/in", "rate_limit": "0", "max_concurrency": "10"})
    assert not Endpoint.objects.get(pk=endpoint.pk).enabled
    console.post("/admin/master/console/webhooks/endpoint/", {"action": "enable", "_selected_action": [endpoint.pk]})
    console.post(f"/admin/master/console/webhooks/endpoint/{endpoint.pk}/delete/", {"post": "yes"})
    assert not Endpoint.objects.exists()
    events = Event.objects.filter(realm=realm, kind=Event.ADMIN, resource_type="WEBHOOK_ENDPOINT").order_by("time")
    admin = User.objects.get(realm__name="master", username="console-admin")
    assert [e.type for e in events] == ["CREATE", "UPDATE", "UPDATE", "DELETE"]
    assert {e.user_id for e in events} == {admin.pk}


def test_console_form_fixes_the_realm_and_only_the_services_record_events(console, realm):
    from realms.models import Event

    field = console.get("/admin/master/console/webhooks/endpoint/add/").context["adminform"].form.fields["realm"]
    assert field.disabled and field.initial == realm.pk
    console.post("/admin/master/console/webhooks/endpoint/add/", {
        "url": "https://hooks.example.com/in", "enabled": "on", "rate_limit": "0",
        "max_concurrency": "10"})
    events = Event.objects.filter(realm=realm, kind=Event.ADMIN)
    assert [(e.resource_type, e.type) for e in events] == [("WEBHOOK_ENDPOINT", "CREATE")]
