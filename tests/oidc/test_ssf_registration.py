"""A receiver's Shared Signals stream through client registration (RFC 7592 read and update): the
``default`` provider's ClientRepresentation carries the stream's attributes as the Admin API's
GET does (Keycloak 26.7 keeps them in the client's attributes, which its registration answers
with), an update may send them back unchanged and is refused changing them; the ``openid-connect``
provider's RFC 7591 metadata has no such field, as Keycloak's DescriptionConverter maps none."""
import json

import pytest
from django.test import Client as HttpClient

from oidc.ssf import streams
from oidc.ssf.models import SsfStream
from realms.models import Client
from tests.oidc.test_ssf import admin_token, realm, ssf_feature  # noqa: F401 -- fixtures

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("ssf_feature")]

STREAM_KEYS = {"ssf.streamId", "ssf.status", "ssf.streamConfig"}


def _registered(realm, admin_token):
    """A receiver registered through the ``default`` provider, its poll stream, and the
    registration access token the registration answered."""
    admin = HttpClient(HTTP_AUTHORIZATION=f"Bearer {admin_token}")
    iat = admin.post(f"/admin/realms/{realm.name}/clients-initial-access", data=json.dumps({"count": 1}),
                     content_type="application/json").json()["token"]
    created = HttpClient(HTTP_AUTHORIZATION=f"Bearer {iat}").post(
        f"/realms/{realm.name}/clients-registrations/default", content_type="application/json",
        data=json.dumps({"clientId": "registered-rx", "serviceAccountsEnabled": True,
                         "attributes": {"ssf.enabled": "true"}}))
    assert created.status_code == 201, created.content
    assert not STREAM_KEYS & set(created.json()["attributes"])  # a new client has no stream
    client = Client.objects.get(realm=realm, client_id="registered-rx")
    stream = streams.create(client, f"http://testserver/realms/{realm.name}", {"delivery": {"method": SsfStream.POLL}})
    return stream, created.json()["registrationAccessToken"]


def _call(method, realm, provider, token, body=None):
    http = HttpClient(HTTP_AUTHORIZATION=f"Bearer {token}")
    url = f"/realms/{realm.name}/clients-registrations/{provider}/registered-rx"
    if body is None:
        return getattr(http, method)(url)
    return getattr(http, method)(url, data=json.dumps(body), content_type="application/json")


def test_the_registration_read_carries_the_stream_as_the_admin_api_does(realm, admin_token):
    stream, rat = _registered(realm, admin_token)
    got = _call("get", realm, "default", rat)
    assert got.status_code == 200, got.content
    attributes = got.json()["attributes"]
    assert attributes["ssf.streamId"] == stream.id and attributes["ssf.status"] == "enabled"
    assert json.loads(attributes["ssf.streamConfig"])["delivery"]["method"] == SsfStream.POLL
    client = Client.objects.get(realm=realm, client_id="registered-rx")
    admin_view = HttpClient(HTTP_AUTHORIZATION=f"Bearer {admin_token}").get(
        f"/admin/realms/{realm.name}/clients/{client.pk}").json()["attributes"]
    assert {k: attributes[k] for k in STREAM_KEYS} == {k: admin_view[k] for k in STREAM_KEYS}

    metadata = _call("get", realm, "openid-connect", got.json()["registrationAccessToken"]).json()
    assert metadata["client_id"] == "registered-rx" and not [k for k in metadata if k.startswith("ssf")]


def test_a_registration_update_sends_the_stream_back_unchanged_and_cannot_change_it(realm, admin_token):
    stream, rat = _registered(realm, admin_token)
    got = _call("get", realm, "default", rat).json()
    row = SsfStream.objects.values().get(pk=stream.id)

    put = _call("put", realm, "default", got["registrationAccessToken"], {**got, "description": "read and written back"})
    assert put.status_code == 200, put.content
    assert {k: put.json()["attributes"][k] for k in STREAM_KEYS} == {k: got["attributes"][k] for k in STREAM_KEYS}
    client = Client.objects.get(realm=realm, client_id="registered-rx")
    assert client.description == "read and written back"
    assert not STREAM_KEYS & set(client.attributes)  # the row stays the one truth
    assert SsfStream.objects.values().get(pk=stream.id) == row

    rat = put.json()["registrationAccessToken"]  # an update rotates it
    refused = _call("put", realm, "default", rat, {**got, "attributes": {**got["attributes"], "ssf.status": "paused"}})
    assert refused.status_code == 400, refused.content
    assert refused.json()["error"] == "invalid_client_metadata"
    assert "ssf.status cannot be changed here" in refused.json()["error_description"]
    assert SsfStream.objects.values().get(pk=stream.id) == row


def test_with_the_feature_off_the_read_leaves_the_stream_out(realm, admin_token, settings):
    _stream, rat = _registered(realm, admin_token)
    settings.IDP_FEATURES = ""
    got = _call("get", realm, "default", rat)
    assert got.status_code == 200, got.content
    assert "ssf.enabled" in got.json()["attributes"] and not STREAM_KEYS & set(got.json()["attributes"])
