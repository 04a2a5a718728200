"""OAuth Client ID Metadata Documents (Keycloak's experimental client-id-metadata-document):
the feature switch and the realm's host policy, the document's rules, the SSRF-safe fetch, the
cache, and a document's client through the authorization and token endpoints."""
import pytest
from django.core.cache import cache

from oidc import client_metadata as cimd
from realms.models import Client, ClientScope, Event, ProtocolMapper, RealmDefaultClientScope

from .conftest import MCP, authorize, claims_of, redeem, sign_in

pytestmark = pytest.mark.django_db
CALLBACK = "http://127.0.0.1:9/callback"


@pytest.fixture
def enabled(settings, realm):
    settings.IDP_FEATURES = cimd.FEATURE
    realm.attributes = {**realm.attributes, cimd.ALLOWED_HOSTS: "127.0.0.1", cimd.CONSENT_REQUIRED: "false"}
    realm.save()
    # As Keycloak's MCP guide has it: a realm default client scope whose audience mapper names the
    # MCP server, so a client made from a document (full scope off) may address it.
    scope = ClientScope.objects.create(realm=realm, name="mcp:tools", protocol="openid-connect")
    ProtocolMapper.objects.create(client_scope=scope, name="mcp audience", protocol_mapper="oidc-audience-mapper",
                                  config={"included.client.audience": "mcp-server", "access.token.claim": "true"})
    RealmDefaultClientScope.objects.create(realm=realm, client_scope=scope, default=True)
    return realm


def document(client_id, **extra):
    return {"client_id": client_id, "client_name": "MCP Inspector", "redirect_uris": [CALLBACK],
            "token_endpoint_auth_method": "none", **extra}


def publish(documents, path="/client.json", **extra):
    client_id = documents.base + path
    return documents.serve(path, {**document(client_id), **extra})


def refused_page(http, realm, client_id, redirect_uri=CALLBACK):
    page, _ = authorize(http, realm, client_id=client_id, redirect_uri=redirect_uri)
    assert page.status_code == 400
    assert "Invalid parameter: client_id" in page.content.decode()
    assert not Client.objects.filter(realm=realm, client_id=client_id).exists()


def last_reason(realm):
    return Event.objects.filter(realm=realm, type__in=("CLIENT_REGISTER_ERROR", "CLIENT_UPDATE_ERROR")) \
        .latest("time").details["reason"]


def test_a_document_is_a_public_client_through_authorization_and_token_endpoints(http, enabled, documents):
    realm = enabled
    client_id = publish(documents)
    code, verifier = sign_in(http, realm, client_id=client_id, redirect_uri=CALLBACK, resource=[MCP])
    client = Client.objects.get(realm=realm, client_id=client_id)
    assert client.public_client and client.name == "MCP Inspector" and not client.full_scope_allowed
    assert client.attributes[cimd.MARKER] and client.attributes["pkce.code.challenge.method"] == "S256"
    assert Event.objects.filter(realm=realm, type="CLIENT_REGISTER", client_id=client_id).exists()
    answer = redeem(http, realm, code, verifier, client_id=client_id, redirect_uri=CALLBACK, secret="")
    assert answer.status_code == 200, answer.content
    claims = claims_of(answer.json()["access_token"])
    assert claims["azp"] == client_id and claims["aud"] == MCP


def test_consent_is_required_by_default(http, settings, realm, documents):
    settings.IDP_FEATURES = cimd.FEATURE
    realm.attributes = {**realm.attributes, cimd.ALLOWED_HOSTS: "*.example.com 127.0.0.1"}
    realm.save()
    client_id = publish(documents)
    code, _ = sign_in(http, realm, client_id=client_id, redirect_uri=CALLBACK)  # accepts the consent page
    assert code and Client.objects.get(realm=realm, client_id=client_id).consent_required


def test_feature_off_the_url_is_an_unknown_client(http, settings, enabled, documents):
    settings.IDP_FEATURES = ""
    client_id = publish(documents)
    page, _ = authorize(http, enabled, client_id=client_id, redirect_uri=CALLBACK)
    assert page.status_code == 400 and "Client not found." in page.content.decode()
    assert documents.hits == {}  # nothing fetched
    assert "client_id_metadata_document_supported" not in http.get(
        f"/realms/{enabled.name}/.well-known/openid-configuration").json()


def test_feature_off_hides_a_client_made_before(http, settings, enabled, documents):
    client_id = publish(documents)
    sign_in(http, enabled, client_id=client_id, redirect_uri=CALLBACK)
    settings.IDP_FEATURES = ""
    page, _ = authorize(http, enabled, client_id=client_id, redirect_uri=CALLBACK)
    assert "Client not found." in page.content.decode()


def test_discovery_advertises_support_when_on(http, enabled):
    meta = http.get(f"/realms/{enabled.name}/.well-known/openid-configuration").json()
    assert meta["client_id_metadata_document_supported"] is True


@pytest.mark.parametrize("hosts", ["", "example.com", "*.example.com", "127.0.0.2"])
def test_host_not_allowed_by_the_realm(http, enabled, documents, hosts):
    enabled.attributes = {**enabled.attributes, cimd.ALLOWED_HOSTS: hosts}
    enabled.save()
    client_id = publish(documents)
    refused_page(http, enabled, client_id)
    assert last_reason(enabled) == cimd.ERR_NOTALLOWED_DOMAIN
    assert documents.hits == {}


def test_host_patterns():
    class R:
        attributes = {cimd.ALLOWED_HOSTS: "*.example.com##app.test, 127.0.0.1"}
    assert cimd.host_allowed(R, "example.com") and cimd.host_allowed(R, "a.b.example.com")
    assert cimd.host_allowed(R, "APP.test") and cimd.host_allowed(R, "127.0.0.1")
    assert not cimd.host_allowed(R, "badexample.com") and not cimd.host_allowed(R, "x.app.test")


@pytest.mark.parametrize("extra, reason", [
    ({"client_id": "https://elsewhere.example/client.json"}, cimd.ERR_METADATA_CLIENTID_UNMATCH),
    ({"client_id": ""}, cimd.ERR_METADATA_NOCLIENTID),
    ({"redirect_uris": ["http://127.0.0.1:9/other"]}, cimd.ERR_METADATA_REDIRECTURI),
    ({"redirect_uris": "http://127.0.0.1:9/callback"}, cimd.ERR_METADATA_REDIRECTURI),
    ({"token_endpoint_auth_method": "client_secret_basic"}, cimd.ERR_METADATA_NOTALLOWED_CLIENTAUTH),
    ({"token_endpoint_auth_method": "private_key_jwt"}, cimd.ERR_METADATA_JWKS),
    ({"client_secret": "s3cret"}, cimd.ERR_METADATA_CLIENTSECRET),
])
def test_document_rules(http, enabled, documents, extra, reason):
    client_id = publish(documents, **extra)
    refused_page(http, enabled, client_id)
    assert last_reason(enabled) == reason


def test_private_key_jwt_document_is_a_confidential_client(http, enabled, documents):
    client_id = publish(documents, token_endpoint_auth_method="private_key_jwt",
                        jwks_uri="https://keys.example/jwks.json")
    page, _ = authorize(http, enabled, client_id=client_id, redirect_uri=CALLBACK)
    assert page.status_code == 200
    client = Client.objects.get(realm=enabled, client_id=client_id)
    assert not client.public_client and client.client_authenticator_type == "client-jwt"
    assert client.attributes["jwks.url"] == "https://keys.example/jwks.json"


@pytest.mark.parametrize("suffix, reason", [
    ("/", cimd.ERR_EMPTY_URL_PATH), ("/a/../client.json", cimd.ERR_URL_PATH_TRAVERSAL),
    ("/client.json?x=1", cimd.ERR_URL_QUERY), ("/client.json#f", cimd.ERR_URL_FRAGMENT),
])
def test_client_id_url_rules(http, enabled, documents, suffix, reason):
    refused_page(http, enabled, documents.base + suffix)
    assert last_reason(enabled) == reason


def test_userinfo_in_the_url_is_refused(enabled):
    with pytest.raises(cimd.MetadataRefused) as refused:
        cimd.check_client_id(enabled, "http://user@127.0.0.1:9/client.json")
    assert refused.value.description == cimd.ERR_URL_USERINFO


def test_https_only_unless_outbound_http_is_allowed(http, settings, enabled, documents):
    settings.IDP_OUTBOUND_ALLOW_HTTP = False
    refused_page(http, enabled, publish(documents))
    assert last_reason(enabled) == cimd.ERR_INVALID_URL_SCHEME


@pytest.mark.parametrize("host", ["10.0.0.7", "169.254.169.254", "192.168.1.20"])
def test_a_private_address_is_refused(http, enabled, outbound_loopback, host):
    """SSRF: the realm allows the host, the outbound client still refuses a non-public address."""
    enabled.attributes = {**enabled.attributes, cimd.ALLOWED_HOSTS: host}
    enabled.save()
    refused_page(http, enabled, f"http://{host}/client.json")
    assert last_reason(enabled) == cimd.ERR_PRIVATE_ADDRESS


@pytest.mark.parametrize("status, body", [(404, b"{}"), (500, b"{}"), (200, b"not json"),
                                          (200, b"[1]"), (200, b"{" + b" " * cimd.MAX_BYTES + b"}")])
def test_fetch_failure(http, enabled, documents, status, body):
    client_id = documents.serve("/client.json", body, status=status)
    refused_page(http, enabled, client_id)
    assert last_reason(enabled) in (cimd.ERR_FETCH, cimd.ERR_METADATA_NOCONTENT)


def test_nothing_listening_is_a_fetch_failure(http, enabled, documents):
    documents.close()
    refused_page(http, enabled, documents.base + "/client.json")
    assert last_reason(enabled) == cimd.ERR_FETCH


def test_cache_within_max_age_then_refetched_and_updated(http, enabled, documents):
    client_id = documents.serve("/client.json", document(documents.base + "/client.json"),
                                headers={"Cache-Control": "public, max-age=600"})
    assert authorize(http, enabled, client_id=client_id, redirect_uri=CALLBACK)[0].status_code == 200
    assert authorize(http, enabled, client_id=client_id, redirect_uri=CALLBACK)[0].status_code == 200
    assert documents.hits["/client.json"] == 1  # the second request was answered from the cache
    # The document changes; once its max-age is over the row follows it.
    documents.serve("/client.json", document(client_id, client_name="Renamed",
                                             redirect_uris=[CALLBACK, "http://127.0.0.1:9/second"]))
    cache.delete(cimd._fresh_key(enabled, client_id))
    page, _ = authorize(http, enabled, client_id=client_id, redirect_uri="http://127.0.0.1:9/second")
    assert page.status_code == 200 and documents.hits["/client.json"] == 2
    client = Client.objects.get(realm=enabled, client_id=client_id)
    assert client.name == "Renamed" and "http://127.0.0.1:9/second" in client.redirect_uris
    assert Event.objects.filter(realm=enabled, type="CLIENT_UPDATE", client_id=client_id).count() == 1


def test_no_store_is_fetched_every_time_but_unchanged_rows_are_not_rewritten(http, enabled, documents):
    client_id = documents.serve("/client.json", document(documents.base + "/client.json"),
                                headers={"Cache-Control": "no-store"})
    for _ in range(2):
        assert authorize(http, enabled, client_id=client_id, redirect_uri=CALLBACK)[0].status_code == 200
    assert documents.hits["/client.json"] == 2
    assert not Event.objects.filter(realm=enabled, type="CLIENT_UPDATE").exists()


@pytest.mark.parametrize("header, ttl", [
    (None, cimd.DEFAULT_TTL), ("max-age=60", 60), ("s-maxage=30, max-age=60", 30), ("no-cache", 0),
    ("max-age=999999999", cimd.MAX_TTL), ("private", cimd.DEFAULT_TTL), ("max-age=abc", cimd.DEFAULT_TTL),
])
def test_cache_ttl_bounds(header, ttl):
    assert cimd.cache_ttl({"Cache-Control": header} if header else {}) == ttl


def test_a_realms_own_url_client_is_left_alone(http, enabled, documents):
    """A client the realm configured with a URL for clientId (as SAML entity ids are) is never a
    document's: nothing is fetched."""
    client_id = publish(documents)
    Client.objects.create(realm=enabled, client_id=client_id, public_client=True, redirect_uris=[CALLBACK],
                          attributes={"pkce.code.challenge.method": "S256"})
    assert authorize(http, enabled, client_id=client_id, redirect_uri=CALLBACK)[0].status_code == 200
    assert documents.hits == {}
