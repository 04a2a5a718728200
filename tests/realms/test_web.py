"""realms.http.web: the one base URL and issuer URL, and the client address with the trusted-proxy
rule (X-Forwarded-For believed only from IDP_TRUSTED_PROXIES), unit by unit and through the real
token endpoint into the recorded event."""
import pytest
from django.test import Client as HttpClient
from django.test import RequestFactory

from realms.http.web import base_url, client_address, realm_url
from realms.models import Client, Event
from realms.representation.services import add_default_client_scopes, create_realm

TOKEN = "/realms/acme/protocol/openid-connect/token"


def _request(peer="198.51.100.9", forwarded=None, host="idp.example"):
    extra = {"REMOTE_ADDR": peer, "HTTP_HOST": host}
    if forwarded is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded
    return RequestFactory().get("/", **extra)


def test_base_url_from_settings_else_the_request(settings):
    settings.IDP_BASE_URL = ""
    assert base_url(_request()) == "http://idp.example"
    assert realm_url(_request(), "acme") == "http://idp.example/realms/acme"
    assert base_url() == "" and realm_url(None, "acme") == ""  # no request, nothing configured: unknown
    settings.IDP_BASE_URL = "https://sso.example/"
    assert base_url(_request()) == "https://sso.example" == base_url()
    assert realm_url(None, "acme") == "https://sso.example/realms/acme"


def test_base_url_from_the_request_checks_allowed_hosts(settings):
    from django.core.exceptions import DisallowedHost

    settings.IDP_BASE_URL = ""
    settings.ALLOWED_HOSTS = ["idp.example"]
    with pytest.raises(DisallowedHost):
        base_url(_request(host="attacker.example"))


@pytest.mark.parametrize("trusted, peer, forwarded, expected", [
    ([], "198.51.100.9", "203.0.113.7", "198.51.100.9"),  # no proxy trusted: header ignored
    (["10.0.0.0/8"], "198.51.100.9", "203.0.113.7", "198.51.100.9"),  # peer not a trusted proxy
    (["10.0.0.0/8"], "10.1.2.3", "203.0.113.7", "203.0.113.7"),
    (["10.0.0.0/8"], "10.1.2.3", "192.0.2.66, 203.0.113.7", "203.0.113.7"),  # rightmost untrusted hop
    (["10.0.0.0/8"], "10.1.2.3", "203.0.113.7, 10.9.9.9", "203.0.113.7"),  # trusted hops skipped
    (["10.0.0.0/8"], "10.1.2.3", "not-an-ip", "10.1.2.3"),
    (["10.0.0.0/8"], "10.1.2.3", None, "10.1.2.3"),
    (["10.0.0.0/8", "::1"], "::1", "2001:db8::1", "2001:db8::1"),
])
def test_client_address(settings, trusted, peer, forwarded, expected):
    settings.IDP_TRUSTED_PROXIES = trusted
    assert client_address(_request(peer, forwarded)) == expected


@pytest.fixture
def realm(db):
    from django.core.cache import cache

    from realms.data import realm_cache

    cache.clear()
    realm_cache.clear()
    realm = create_realm("acme", events_enabled=True)
    client = Client(realm=realm, client_id="svc", service_accounts_enabled=True)
    client.set_secret("svc-secret-" + "x" * 20)
    client.save()
    add_default_client_scopes(client)
    yield realm
    realm_cache.clear()


@pytest.mark.parametrize("trusted, expected", [([], "127.0.0.1"), (["127.0.0.1"], "203.0.113.7")])
def test_token_endpoint_event_records_the_client_address(realm, settings, trusted, expected):
    settings.IDP_TRUSTED_PROXIES = trusted
    # The test client's peer is 127.0.0.1; a proxy in front terminates TLS (sslRequired=external
    # refuses plain HTTP from a public address).
    http = HttpClient(HTTP_X_FORWARDED_FOR="203.0.113.7", HTTP_X_FORWARDED_PROTO="https")
    refused = http.post(TOKEN, {"grant_type": "client_credentials", "client_id": "svc", "client_secret": "wrong"})
    assert refused.status_code == 401
    assert Event.objects.get(type="CLIENT_LOGIN_ERROR").ip_address == expected
