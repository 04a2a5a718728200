"""Three defects of fat payloads (decision 0098, amended): settings merely named after secrets were
dropped from snapshots; a redelivery to an endpoint whose format the message was never rendered
in went out thin without a word; and the admin events of an endpoint and its consumer portal
left out its payload settings. Real database, real loopback receiver, bodies checked with the
Standard Webhooks and CloudEvents libraries."""
import json
import re
from html import unescape

import pytest
import standardwebhooks
from cloudevents.http import from_http
from django.test import Client as DjangoClient

from realms.audit.events import emit
from realms.data.keys import generate_key
from realms.models import Client, Component, Event, IdentityProvider, Realm
from realms.representation.realm import export_realm
from realms.users.accounts import create_user
from tests.browser import chromium  # noqa: F401 (a fixture)
from tests.webhooks.test_payloads import _endpoint, _received, _send_all, _user_update, no_dispatch  # noqa: F401
from tests.webhooks.test_portal import _open, _split
from tests.webhooks.test_rest import tokens  # noqa: F401 (a fixture)
from webhooks import catalogue, delivery, portal, services
from webhooks.catalogue import PayloadVersion
from webhooks.models import Delivery, Endpoint, Message
from webhooks.snapshots import V1, without_secrets

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]


# 1. Exactly the keys that hold secrets are dropped ------------------------------------------------

def test_a_fat_realm_snapshot_keeps_settings_named_after_secrets_and_drops_the_secrets(realm, no_dispatch):
    _endpoint(realm, "https://hooks.example.com/in", ["realm.*"], payload="fat")
    realm.reset_password_allowed = True
    realm.password_policy = "length(12) and notUsername"
    realm.smtp_server = {"host": "smtp.example.org", "user": "mailer", "password": "smtp-password-value",
                         "authTokenClientSecret": "smtp-oauth-secret-value"}
    realm.save()
    emit(realm, "UPDATE", kind=Event.ADMIN, resource_type="REALM", resource_path="")
    body = json.loads(json.loads(Message.objects.get(type="realm.updated").bodies)["fat.v1"])
    rep = body["data"]["representation"]
    assert rep["resetPasswordAllowed"] is True
    assert rep["passwordPolicy"] == "length(12) and notUsername"
    assert rep["resetCredentialsFlow"] == "reset credentials" and "requiredCredentials" in rep
    assert "webAuthnPolicyPasswordlessPasskeysEnabled" in rep  # dropped by the old word match
    assert rep["smtpServer"] == {"host": "smtp.example.org", "user": "mailer"}
    everything = json.dumps(body)
    assert "smtp-password-value" not in everything and "smtp-oauth-secret-value" not in everything


def test_a_fat_client_snapshot_keeps_its_settings_and_drops_its_secrets(realm, no_dispatch):
    _endpoint(realm, "https://hooks.example.com/in", ["client.*"], payload="fat")
    client = Client.objects.create(realm=realm, client_id="crm", public_client=False,
                                   registration_access_token="registration-token-value", attributes={
                                       "client.secret.creation.time": "1764400000",
                                       "client_credentials.use_refresh_token": "false",
                                       "client.secret.rotated": "old-rotated-secret-value",
                                       "saml.signing.private.key": "saml-private-key-value"})
    client.set_secret("client-secret-value-123")
    client.save()
    emit(realm, "UPDATE", kind=Event.ADMIN, resource_type="CLIENT", resource_path=f"clients/{client.pk}")
    body = json.loads(Message.objects.get(type="client.updated").bodies)["fat.v1"]
    rep = json.loads(body)["data"]["representation"]
    assert rep["attributes"] == {"client.secret.creation.time": "1764400000",
                                 "client_credentials.use_refresh_token": "false"}
    assert rep["clientAuthenticatorType"] == "client-secret" and rep["publicClient"] is False
    assert "secret" not in rep and "registrationAccessToken" not in rep
    for secret in ("client-secret-value-123", "old-rotated-secret-value", "saml-private-key-value",
                   "registration-token-value"):
        assert secret not in body


def test_every_secret_of_a_full_export_is_dropped_and_nothing_else(realm):
    """Kinds no payload version snapshots yet (identity providers, LDAP, key providers) are in the
    full export: the one filter takes their secrets out and leaves their settings."""
    for algorithm in ("RS256", "ES256", "EdDSA", "HS256"):
        generate_key(realm, algorithm)
    IdentityProvider.objects.create(realm=realm, alias="corp", provider_id="oidc",
                                    config={"clientId": "idp-client-id", "clientSecret": "idp-client-secret-value"})
    Component.objects.create(realm=realm, name="ldap", provider_id="ldap",
                             provider_type="org.keycloak.storage.UserStorageProvider",
                             config={"bindDn": ["cn=admin,dc=example,dc=org"], "bindCredential": ["ldap-bind-value"]})
    create_user(realm, "grace", password="Password-value-9!")
    export = export_realm(realm)
    clean = without_secrets(export)
    key_material = {"rsa": "privateKey", "ecdsa-generated": "ecdsaPrivateKey", "eddsa-generated": "eddsaPrivateKey",
                    "hmac-generated": "secret"}
    stored = {c["providerId"]: c["config"] for c in export["components"]["org.keycloak.keys.KeyProvider"]}
    kept = {c["providerId"]: c["config"] for c in clean["components"]["org.keycloak.keys.KeyProvider"]}
    assert set(stored) == set(kept) == set(key_material)
    for provider, name in key_material.items():
        assert stored[provider][name][0] and set(stored[provider]) - set(kept[provider]) == {name}
    assert kept["rsa"]["certificate"] and kept["ecdsa-generated"]["ecdsaPublicKey"]
    ldap = clean["components"]["org.keycloak.storage.UserStorageProvider"][0]["config"]
    assert ldap == {"bindDn": ["cn=admin,dc=example,dc=org"]}
    assert clean["identityProviders"][0]["config"]["clientId"] == "idp-client-id"
    assert "clientSecret" not in clean["identityProviders"][0]["config"]
    assert "credentials" in export["users"][0] and "credentials" not in clean["users"][0]
    text = json.dumps(clean)
    for secret in ("idp-client-secret-value", "ldap-bind-value", "$argon2", "pbkdf2",
                   *(stored[provider][name][0] for provider, name in key_material.items())):
        assert secret not in text


# 2. Redelivery to an endpoint the message was never rendered for ---------------------------------

def test_redelivery_renders_a_thin_format_from_the_stored_payload(realm, receiver_server, no_dispatch):
    _endpoint(realm, "https://hooks.example.com/in", ["user.updated"])
    _user_update(realm, create_user(realm, "ada"))
    message = Message.objects.get()
    assert message.bodies == ""
    ce = _endpoint(realm, receiver_server.url(), ["user.updated"], envelope="cloudevents")
    assert services.redeliver_event(ce, message.pk) == 1
    assert Delivery.objects.get(endpoint=ce).format == "thin+ce"
    _send_all()
    (req,) = _received(receiver_server, ce)
    assert {k.lower(): v for k, v in req["headers"].items()}["content-type"] == "application/cloudevents+json"
    event = from_http(req["headers"], req["body"])
    assert event["id"] == message.pk and event["type"] == "user.updated"
    assert event.data == json.loads(message.payload)["data"]
    # Stored with the message: a second redelivery sends the same bytes.
    services.redeliver_event(ce, message.pk)
    _send_all()
    first, second = _received(receiver_server, ce)
    assert first["body"] == second["body"]


def test_redelivery_in_the_other_envelope_carries_the_snapshot_of_the_events_time(realm, receiver_server,
                                                                                   no_dispatch):
    _endpoint(realm, "https://hooks.example.com/in", ["user.updated"], payload="fat")
    user = create_user(realm, "lin", first_name="Lin")
    _user_update(realm, user)
    user.first_name = "Changed later"
    user.save()
    message = Message.objects.get()
    ce = _endpoint(realm, receiver_server.url(), ["user.updated"], payload="fat", envelope="cloudevents")
    services.redeliver_event(ce, message.pk)
    _send_all()
    (req,) = _received(receiver_server, ce)
    event = from_http(req["headers"], req["body"])
    assert event["payload"] == "fat" and event["payloadversion"] == "v1"
    assert req["headers"]["webhook-payload-version"] == "v1"
    assert event.data["representation"]["firstName"] == "Lin"
    assert event.data == json.loads(json.loads(message.bodies)["fat.v1"])["data"]


def test_redelivery_of_a_truncated_snapshot_stays_truncated(realm, no_dispatch, settings):
    settings.IDP_WEBHOOK_PAYLOAD_LIMIT = 600
    _endpoint(realm, "https://hooks.example.com/in", ["user.updated"], payload="fat")
    _user_update(realm, create_user(realm, "big", attributes={"blob": ["x" * 2000]}))
    message = Message.objects.get()
    ce = _endpoint(realm, "https://hooks.example.com/ce", ["user.updated"], payload="fat", envelope="cloudevents")
    services.redeliver_event(ce, message.pk)
    body = json.loads(json.loads(Message.objects.get().bodies)["fat.v1+ce"])
    assert body["payload"] == "thin" and body["truncated"] is True and body["payloadversion"] == "v1"
    assert "representation" not in body["data"]


@pytest.mark.parametrize("kept", ["thin", "fat"])
def test_redelivery_needing_a_snapshot_never_taken_is_refused(realm, no_dispatch, monkeypatch, kept):
    """Thin only, or fat of another version: no snapshot of v1 was taken at the event, and one
    taken now would be the object's present state under the old event id."""
    if kept == "fat":  # a message rendered in a v2 only
        monkeypatch.setitem(catalogue.VERSIONS, "v2", PayloadVersion("v2", "v1's objects", V1.objects))
    _endpoint(realm, "https://hooks.example.com/in", ["user.updated"],
              **({"payload": "fat", "payload_version": "v2"} if kept == "fat" else {}))
    _user_update(realm, create_user(realm, "rey"))
    message = Message.objects.get()
    bodies = message.bodies
    fat = _endpoint(realm, "https://hooks.example.com/fat", ["user.updated"], payload="fat", payload_version="v1")
    with pytest.raises(services.WebhookError) as refused:
        services.redeliver_event(fat, message.pk)
    assert str(refused.value).startswith(f"event {message.pk} cannot be redelivered to this endpoint: ")
    assert "no snapshot of its object was taken" in str(refused.value)
    assert not Delivery.objects.filter(endpoint=fat).exists()
    assert Message.objects.get().bodies == bodies


def test_the_rest_api_refuses_such_a_redelivery_in_words(realm, tokens, no_dispatch):  # noqa: F811
    _endpoint(realm, "https://hooks.example.com/in", ["user.updated"])
    _user_update(realm, create_user(realm, "kim"))
    message = Message.objects.get()
    fat = _endpoint(realm, "https://hooks.example.com/fat", ["user.updated"], payload="fat")
    resp = DjangoClient(HTTP_AUTHORIZATION=f"Bearer {tokens['admin']}").post(
        f"/admin/realms/wh-realm/webhooks/{fat.pk}/redeliver", data=json.dumps({"eventId": message.pk}),
        content_type="application/json")
    assert resp.status_code == 400
    assert resp.json()["errorMessage"].startswith(f"event {message.pk} cannot be redelivered to this endpoint: "
                                                  "the event was written before any endpoint asked for fat v1")


# 3. Every representation of an endpoint carries its payload settings ------------------------------

def test_admin_events_carry_the_endpoints_representation_with_its_payload_settings(realm, no_dispatch):
    realm.admin_events_details_enabled = True
    realm.save()
    endpoint = _endpoint(realm, "https://hooks.example.com/in", [], payload="fat", envelope="cloudevents",
                         ordered=True)
    services.update_endpoint(endpoint, payload="thin")
    services.rotate_secret(Endpoint.objects.prefetch_related("secrets").get(pk=endpoint.pk), signature="v1a")
    events = list(Event.objects.filter(realm=realm, kind=Event.ADMIN, resource_type="WEBHOOK_ENDPOINT")
                  .order_by("time"))
    created, updated, rotated = (json.loads(e.representation) for e in events)
    assert {k: created[k] for k in ("payload", "payloadVersion", "envelope", "ordered")} == {
        "payload": "fat", "payloadVersion": "v1", "envelope": "cloudevents", "ordered": True}
    assert (updated["payload"], updated["payloadVersion"], updated["envelope"]) == ("thin", None, "cloudevents")
    # The REST API's GET answers the same representation.
    assert rotated == json.loads(json.dumps(services.representation(Endpoint.objects.get(pk=endpoint.pk))))
    assert rotated["signature"] == "v1a" and len(rotated["publicKeys"]) == 1  # the rotation's new key


@pytest.mark.parametrize("settings_, shown", [
    ({}, ("Thin: the event type and ids", "Standard (type, timestamp, data)", "Events may arrive in any order")),
    ({"payload": "fat", "envelope": "cloudevents", "ordered": True},
     ("Fat: a snapshot of the object, payload version v1", "CloudEvents 1.0 (structured JSON)",
      "The events of one subject arrive in the order they happened")),
])
def test_the_consumer_portal_shows_the_payload_settings(realm, settings_, shown):
    endpoint = _endpoint(realm, "https://hooks.example.com/in", **settings_)
    url, _ = portal.issue_link(None, endpoint)
    http = DjangoClient()
    assert _open(http, url).status_code == 303
    page = http.get(_split(url)[0], HTTP_ACCEPT_LANGUAGE="en")
    html = page.content.decode()
    assert page.status_code == 200 and "webhookPortal" not in html
    got = tuple(unescape(re.search(rf'<dd id="endpoint-{name}">(.*?)</dd>', html).group(1))
                for name in ("payload", "envelope", "ordered"))
    assert got == shown


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_portal_summary_in_german_on_a_phone(chromium, live_server):  # noqa: F811
    realm = Realm.objects.create(name="wh-portal-de", internationalization_enabled=True,
                                 supported_locales=["en", "de"], default_locale="en")
    endpoint = _endpoint(realm, "https://hooks.example.com/in", payload="fat", envelope="cloudevents", ordered=True)
    url, _ = portal.issue_link(None, endpoint, expires_in=600)
    context = chromium.new_context(viewport={"width": 375, "height": 800}, locale="de-DE")
    try:
        page = context.new_page()
        page.goto(live_server.url.replace("localhost", "127.0.0.1") + re.sub(r"^https?://[^/]+", "", url))
        assert page.locator("#endpoint-payload").inner_text() == (
            "Vollständig: ein Abbild des Objekts, Nutzlast-Version v1")
        assert page.locator("#endpoint-envelope").inner_text() == "CloudEvents 1.0 (strukturiertes JSON)"
        assert page.locator("#endpoint-ordered").is_visible()
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    finally:
        context.close()
