"""Pairwise subjects (oidc-sha256-pairwise-sub-mapper): Keycloak's values, one per sector, the
same in every token of the client, and everything that reads ``sub`` back still finding the user."""
import hashlib
import uuid

import pytest
from django.test import RequestFactory

from oidc import backchannel, logout, realm_cache
from oidc.mappers import PAIRWISE, pairwise_subject
from oidc.tokens import decode
from realms.models import ClientSession, ProtocolMapper, UserSession
from realms.representation import RepresentationError, import_realm
from tests.oidc.endpoints.conftest import SECRET, basic, client_of, code_for, exchange, refresh, url

SALT = "pepper"


def keycloak_sub(host, user_id, salt):
    """Keycloak's SHA256PairwiseSubMapper as documented: SHA-256 of sector host, local sub and
    salt (UTF-8, in that order), then Java's UUID.nameUUIDFromBytes of the digest: MD5, version 3
    in the high nibble of byte 6, the IETF variant in the top bits of byte 8."""
    md5 = bytearray(hashlib.md5(hashlib.sha256((host + user_id + salt).encode()).digest()).digest())
    md5[6] = (md5[6] & 0x0F) | 0x30
    md5[8] = (md5[8] & 0x3F) | 0x80
    h = md5.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def test_value_is_keycloaks():
    user_id = "2b9d7b3e-7a3e-4c8e-9a53-0f6c1d2e3f40"
    assert pairwise_subject("app.example", user_id, SALT) == keycloak_sub("app.example", user_id, SALT)
    assert uuid.UUID(pairwise_subject("app.example", user_id, SALT)).version == 3
    assert pairwise_subject("other.example", user_id, SALT) != pairwise_subject("app.example", user_id, SALT)


def _pairwise(realm, client_id="app", **config):
    ProtocolMapper.objects.create(client=client_of(realm, client_id), name="pairwise", protocol="openid-connect",
                                  protocol_mapper=PAIRWISE, config={"pairwiseSubAlgorithmSalt": SALT, **config})


def _tokens(http, realm, user):
    code, user_session = code_for(realm, user)
    resp = exchange(http, realm, code)
    assert resp.status_code == 200, resp.content
    return resp.json(), user_session


def _claims(realm, token):
    return decode(realm, token, f"http://testserver/realms/{realm.name}")


def test_every_token_and_userinfo_name_the_user_alike(http, realm, alice):
    _pairwise(realm)
    body, _ = _tokens(http, realm, alice)
    expected = keycloak_sub("app.example", alice.pk, SALT)
    assert _claims(realm, body["access_token"])["sub"] == expected
    assert _claims(realm, body["id_token"])["sub"] == expected
    info = http.get(url(realm, "userinfo"), HTTP_AUTHORIZATION=f"Bearer {body['access_token']}")
    assert info.status_code == 200 and info.json()["sub"] == expected
    introspected = http.post(url(realm, "token/introspect"), {"token": body["access_token"]},
                             HTTP_AUTHORIZATION=basic("app", SECRET)).json()
    assert introspected["active"] is True and introspected["sub"] == expected


def test_refresh_keeps_working_and_the_subject(http, realm, alice):
    _pairwise(realm)
    body, user_session = _tokens(http, realm, alice)
    expected = keycloak_sub("app.example", alice.pk, SALT)
    assert _claims(realm, body["refresh_token"])["sub"] == expected
    introspected = http.post(url(realm, "token/introspect"), {"token": body["refresh_token"]},
                             HTTP_AUTHORIZATION=basic("app", SECRET)).json()
    assert introspected["active"] is True and introspected["sub"] == expected
    again = refresh(http, realm, body["refresh_token"])
    assert again.status_code == 200, again.content
    assert _claims(realm, again.json()["access_token"])["sub"] == expected
    info = http.get(url(realm, "userinfo"), HTTP_AUTHORIZATION=f"Bearer {again.json()['access_token']}")
    assert info.status_code == 200
    out = http.post(url(realm, "logout"), {"refresh_token": again.json()["refresh_token"], "client_id": "app",
                                           "client_secret": SECRET})
    assert out.status_code == 204 and not UserSession.objects.filter(pk=user_session.pk).exists()


def test_logout_id_token_hint_finds_the_session(http, realm, alice):
    _pairwise(realm)
    body, user_session = _tokens(http, realm, alice)
    request = RequestFactory().get("/")
    parsed = logout.parse_logout_request(request, realm_cache.get_realm(realm.name),
                                         f"http://testserver/realms/{realm.name}", {"id_token_hint": body["id_token"]})
    assert parsed.user_session is not None and parsed.user_session.pk == user_session.pk


def test_clients_of_different_sectors_see_different_subjects(http, realm, alice):
    _pairwise(realm)
    _pairwise(realm, "spa")
    body, _ = _tokens(http, realm, alice)
    code, _ = code_for(realm, alice, "spa", redirect_uri="http://127.0.0.1/cb", verifier="v" * 43)
    spa = exchange(http, realm, code, client_id="spa", secret="", redirect_uri="http://127.0.0.1/cb",
                   verifier="v" * 43)
    assert spa.status_code == 200, spa.content
    app_sub = _claims(realm, body["id_token"])["sub"]
    spa_sub = _claims(realm, spa.json()["id_token"])["sub"]
    assert spa_sub == keycloak_sub("127.0.0.1", alice.pk, SALT) and app_sub != spa_sub != alice.pk


def test_service_account_token_still_resolves(http, realm):
    _pairwise(realm)
    resp = http.post(url(realm, "token"), {"grant_type": "client_credentials"}, HTTP_AUTHORIZATION=basic("app", SECRET))
    token = resp.json()["access_token"]
    introspected = http.post(url(realm, "token/introspect"), {"token": token},
                             HTTP_AUTHORIZATION=basic("app", SECRET)).json()
    assert introspected["active"] is True


# Import and the sector identifier URI -----------------------------------------------------------

def _import(name, mapper_config, redirect_uris=("https://app.example/cb",)):
    return import_realm({"realm": name, "enabled": True, "clients": [{
        "clientId": "rp", "secret": SECRET, "redirectUris": list(redirect_uris),
        "protocolMappers": [{"name": "pairwise", "protocol": "openid-connect", "protocolMapper": PAIRWISE,
                             "config": mapper_config}]}]}).realm


@pytest.mark.django_db
def test_import_generates_a_missing_salt_and_keeps_a_given_one():
    realm = _import("pw1", {})
    salt = ProtocolMapper.objects.get(client__realm=realm, protocol_mapper=PAIRWISE).config["pairwiseSubAlgorithmSalt"]
    assert len(salt) >= 32
    realm = _import("pw2", {"pairwiseSubAlgorithmSalt": SALT})
    assert ProtocolMapper.objects.get(client__realm=realm, protocol_mapper=PAIRWISE).config["pairwiseSubAlgorithmSalt"] == SALT


@pytest.mark.django_db
def test_import_refuses_redirect_uris_on_several_hosts_without_a_sector():
    with pytest.raises(RepresentationError, match="multiple host"):
        _import("pw3", {}, ("https://a.example/cb", "https://b.example/cb"))


@pytest.mark.django_db
def test_sector_identifier_listing_every_redirect_uri(sector):
    url = sector.serve("/sector.json", ["https://a.example/cb", "https://b.example/*"])
    realm = _import("pw4", {"sectorIdentifierUri": url}, ("https://a.example/cb", "https://b.example/x?y=1"))
    assert sector.hits["/sector.json"] == 1
    config = realm_cache.get_realm(realm.name).client("rp")
    assert config.subject("u-1") == keycloak_sub("127.0.0.1", "u-1", config.pairwise["pairwiseSubAlgorithmSalt"])


@pytest.mark.django_db
def test_sector_identifier_not_listing_a_redirect_uri_is_refused(sector):
    url = sector.serve("/sector.json", ["https://a.example/cb"])
    with pytest.raises(RepresentationError, match="does not match"):
        _import("pw5", {"sectorIdentifierUri": url}, ("https://a.example/cb", "https://b.example/cb"))


@pytest.mark.django_db
def test_sector_identifier_uri_goes_through_the_ssrf_guard(settings):
    settings.IDP_OUTBOUND_ALLOW_HTTP = False
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = []
    with pytest.raises(RepresentationError, match="Failed to get redirect URIs"):
        _import("pw6", {"sectorIdentifierUri": "http://127.0.0.1:9/sector.json"})


def test_back_channel_logout_token_names_the_pairwise_subject(http, realm, alice):
    _pairwise(realm)
    app = client_of(realm, "app")
    app.attributes = {**app.attributes, "backchannel.logout.url": "https://app.example/bcl"}
    app.save()
    _, user_session = _tokens(http, realm, alice)
    client_sessions = list(ClientSession.objects.select_related("client").filter(user_session=user_session))
    for client_session in client_sessions:
        client_session.notes = {**(client_session.notes or {}), "iss": f"http://testserver/realms/{realm.name}"}
    [(target, token)] = backchannel.pending_notifications(user_session, client_sessions)
    assert target == "https://app.example/bcl"
    assert _claims(realm, token)["sub"] == keycloak_sub("app.example", alice.pk, SALT)
