"""The console's Shared Signals settings are Keycloak's realm and client attributes, and what they
save is what the transmitter reads: the realm switch opens and closes its endpoints, the client's
settings decide the receiver, its default subjects, subject format and audience."""
import base64
import json

import pytest
from django.test import Client as HttpClient

from oidc.ssf import events, streams
from oidc.ssf.models import SsfStream
from realms.models import Client, User
from tests.realms.test_admin import errors_of, read_form, submit
from tests.realms.test_console import acme, console, master  # noqa: F401 (fixtures)
from tests.realms.test_console_forms import change_url

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches", "outbound_loopback", "ssf_feature")]


@pytest.fixture
def ssf_feature(settings):
    settings.IDP_FEATURES = "ssf"


def test_the_settings_are_hidden_while_the_feature_is_off(console, acme, settings):  # noqa: F811
    settings.IDP_FEATURES = ""
    acme.attributes = {**acme.attributes, "ssf.transmitterEnabled": "true", "ssf.defaultSubjects": "NONE"}
    acme.save()
    assert "SSF Transmitter" not in console.get(change_url(acme)).content.decode()
    response = submit(console, change_url(acme), "realm_form", {"display_name": "Acme"})
    assert not errors_of(response), errors_of(response)
    acme.refresh_from_db()  # what the page does not show, it does not overwrite
    assert acme.display_name == "Acme" and acme.attributes["ssf.defaultSubjects"] == "NONE"
    assert acme.attributes["ssf.transmitterEnabled"] == "true"
    app = Client.objects.create(realm=acme, client_id="rx", attributes={"ssf.enabled": "true"})
    assert "SSF Receiver" not in console.get(change_url(app)).content.decode()
    response = submit(console, change_url(app), "client_form", {"description": "d"})
    assert not errors_of(response), errors_of(response)
    app.refresh_from_db()
    assert app.description == "d" and app.attributes["ssf.enabled"] == "true"


def test_realm_switch_opens_and_closes_the_transmitter(console, acme):  # noqa: F811
    discovery = f"/realms/{acme.name}/.well-known/ssf-configuration"
    assert HttpClient().get(discovery).status_code == 404
    page = console.get(change_url(acme)).content.decode()
    assert "SSF Transmitter" in page and "ssf_transmitter_enabled" not in read_form(page, "realm_form")
    response = submit(console, change_url(acme), "realm_form", {"ssf_transmitter_enabled": "on",
                                                                 "ssf_default_subjects": "NONE"})
    assert not errors_of(response), errors_of(response)
    acme.refresh_from_db()
    assert acme.attributes["ssf.transmitterEnabled"] == "true" and acme.attributes["ssf.defaultSubjects"] == "NONE"
    assert HttpClient().get(discovery).json()["default_subjects"] == "NONE"
    response = submit(console, change_url(acme), "realm_form", {"ssf_transmitter_enabled": None})
    assert not errors_of(response), errors_of(response)
    acme.refresh_from_db()
    assert acme.attributes["ssf.transmitterEnabled"] == "false"
    assert HttpClient().get(discovery).status_code == 404


def test_client_settings_make_a_receiver_with_its_format_and_audience(console, acme):  # noqa: F811
    app = Client(realm=acme, client_id="rx", service_accounts_enabled=True)
    app.save()
    response = submit(console, change_url(app), "client_form", {
        "ssf_enabled": "on", "ssf_default_subjects": "NONE", "ssf_user_subject_format": "email",
        "ssf_stream_audience": "https://rx.example/aud", "ssf_signature_algorithm": "ES256"})
    assert not errors_of(response), errors_of(response)
    app.refresh_from_db()
    assert events.receiver_enabled(app)
    assert {k: v for k, v in app.attributes.items() if k.startswith("ssf.") and k != "ssf.enabled"} == {
        "ssf.defaultSubjects": "NONE", "ssf.userSubjectFormat": "email", "ssf.streamAudience": "https://rx.example/aud",
        "ssf.signatureAlgorithm": "ES256"}
    assert events.default_subjects(acme, app) == "NONE"
    stream = SsfStream(realm=acme, client=app, issuer="https://idp.example/realms/acme")
    assert events.user_subject(stream, "u-1", "u@example.org") == {"format": "email", "email": "u@example.org"}
    response = submit(console, change_url(app), "client_form", {
        "ssf_enabled": None, "ssf_default_subjects": "", "ssf_user_subject_format": "", "ssf_stream_audience": "",
        "ssf_signature_algorithm": ""})
    assert not errors_of(response), errors_of(response)
    app.refresh_from_db()
    assert not events.receiver_enabled(app)
    assert not {k for k in app.attributes if k.startswith("ssf.") and k != "ssf.enabled"}  # Keycloak omits them
    assert events.user_subject(stream, "u-1", "u@example.org")["format"] == "iss_sub"


def test_disabling_a_user_in_the_console_is_a_risc_signal(console, acme):  # noqa: F811
    acme.attributes = {**acme.attributes, "ssf.transmitterEnabled": "true"}
    acme.save()
    rx = Client.objects.create(realm=acme, client_id="rx", attributes={"ssf.enabled": "true"})
    stream = streams.create(rx, f"http://testserver/realms/{acme.name}", {
        "delivery": {"method": "urn:ietf:rfc:8936"}, "events_requested": [events.ACCOUNT_DISABLED]})
    user = User.objects.create(realm=acme, username="carol", enabled=True)
    response = submit(console, change_url(user), "user_form", {"enabled": None})
    assert not errors_of(response), errors_of(response)
    response = submit(console, change_url(user), "user_form", {"email": "carol@example.org"})  # no change of enabled
    assert not errors_of(response), errors_of(response)
    sets = streams.poll(stream, {"returnImmediately": True})["sets"]
    assert len(sets) == 1 and events.ACCOUNT_DISABLED in json.loads(_payload(next(iter(sets.values()))))["events"]


def _payload(token):
    part = token.split(".")[1]
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def test_a_streams_webhook_is_neither_changed_nor_deleted_in_the_console(console, acme):  # noqa: F811
    rx = Client.objects.create(realm=acme, client_id="rx", attributes={"ssf.enabled": "true"})
    stream = streams.create(rx, f"http://testserver/realms/{acme.name}", {"delivery": {"method": "urn:ietf:rfc:8936"}})
    endpoints = "/admin/master/console/webhooks/endpoint/"
    listed = console.get(f"{endpoints}?realm__id__exact={acme.pk}")
    assert "the Shared Signals stream of client rx" in listed.content.decode()
    page = console.get(f"{endpoints}{stream.endpoint_id}/change/")
    assert page.status_code == 200 and not page.context["has_change_permission"]
    assert not page.context["has_delete_permission"]
    changed = console.post(f"{endpoints}{stream.endpoint_id}/change/", {
        "url": "https://elsewhere.example/in", "event_types": ["*"], "enabled": "on", "rate_limit": "0",
        "max_concurrency": "10"})
    assert changed.status_code == 403
    assert console.post(f"{endpoints}{stream.endpoint_id}/delete/", {"post": "yes"}).status_code == 403
    bulk = console.post(endpoints, {"action": "delete_selected", "_selected_action": [stream.endpoint_id],
                                    "post": "yes"})
    assert bulk.status_code == 403  # Django refuses a selection holding one it may not delete
    stream.endpoint.refresh_from_db()
    assert stream.endpoint.url.endswith(f"/ssf/transmitter/poll/{stream.pk}") and stream.endpoint.event_types == ["ssf"]
