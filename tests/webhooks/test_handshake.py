"""The optional ownership handshake (spec 2 §4), opt-in per endpoint: before real data the sender
sends OPTIONS with WebHook-Request-Origin; only a 2xx carrying WebHook-Allowed-Origin (our
origin or *) agrees. Checked when the URL is saved, with the same address rules as deliveries."""
import pytest

from webhooks import services
from webhooks.models import Endpoint

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]


@pytest.fixture(autouse=True)
def origin(settings):
    settings.IDP_WEBHOOK_ORIGIN = "idp.example.org"


@pytest.mark.parametrize("allowed", ["idp.example.org", "*"])
def test_target_that_agrees_is_saved(realm, receiver_server, allowed):
    receiver_server.script = [(200, {"WebHook-Allowed-Origin": allowed}, b"")]
    endpoint, _ = services.create_endpoint(realm, receiver_server.url(), [], ownership_handshake=True)
    req = receiver_server.requests[0]
    assert req["method"] == "OPTIONS" and req["headers"]["WebHook-Request-Origin"] == "idp.example.org"
    assert endpoint.ownership_handshake and endpoint.handshake_at is not None


@pytest.mark.parametrize("reply", [
    (200, {}, b""),  # no WebHook-Allowed-Origin: not agreed
    (200, {"WebHook-Allowed-Origin": "someone-else.example"}, b""),
    (403, {"WebHook-Allowed-Origin": "*"}, b""),
])
def test_target_that_does_not_agree_is_refused(realm, receiver_server, reply):
    receiver_server.script = [reply]
    with pytest.raises(services.WebhookError, match="did not agree"):
        services.create_endpoint(realm, receiver_server.url(), [], ownership_handshake=True)
    assert not Endpoint.objects.exists()


def test_without_the_option_no_handshake(realm, receiver_server):
    services.create_endpoint(realm, receiver_server.url(), [])
    assert receiver_server.requests == []


def test_a_new_url_or_turning_it_on_repeats_it(realm, receiver_server):
    endpoint, _ = services.create_endpoint(realm, receiver_server.url("/a"), [])
    receiver_server.script = [(200, {}, b"")]
    with pytest.raises(services.WebhookError):
        services.update_endpoint(endpoint, ownership_handshake=True)
    assert not Endpoint.objects.get(pk=endpoint.pk).ownership_handshake
    receiver_server.default = (204, {"WebHook-Allowed-Origin": "*"}, b"")
    services.update_endpoint(Endpoint.objects.get(pk=endpoint.pk), ownership_handshake=True)
    services.update_endpoint(Endpoint.objects.get(pk=endpoint.pk), url=receiver_server.url("/b"))
    assert [(r["method"], r["path"]) for r in receiver_server.requests] == [
        ("OPTIONS", "/a"), ("OPTIONS", "/a"), ("OPTIONS", "/b")]
    services.update_endpoint(Endpoint.objects.get(pk=endpoint.pk), description="no new handshake")
    assert len(receiver_server.requests) == 3


def test_handshake_obeys_the_address_rules(realm, receiver_server, settings):
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = []  # production: loopback is not public
    with pytest.raises(services.WebhookError, match="non-public"):
        services.create_endpoint(realm, receiver_server.url(), [], ownership_handshake=True)
    assert receiver_server.requests == []
