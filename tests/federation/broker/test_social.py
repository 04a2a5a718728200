"""Social presets: Keycloak's provider ids, built-in endpoints, default scopes and user shapes.
Google, GitLab and Microsoft run against panva's oidc-provider (moved there with the test-only
``IDP_BROKER_PRESET_URLS``), their ID tokens checked as any OIDC provider's; GitHub and Facebook
against a loopback server answering their documented token and user JSON."""
import pytest
from django.core.exceptions import ImproperlyConfigured

from realms.brokering.providers import BrokerError, get_provider_type, provider_types

from .conftest import REDIRECT_URI, query_of

KEYCLOAK_SOCIAL_IDS = {"google", "github", "gitlab", "microsoft", "facebook", "linkedin-openid-connect", "instagram",
                       "paypal", "bitbucket", "stackoverflow"}


def test_presets_registered_as_social():
    types = {t.provider_id: t for t in provider_types()}
    assert KEYCLOAK_SOCIAL_IDS <= set(types)
    assert all(types[i].social for i in KEYCLOAK_SOCIAL_IDS)
    assert not types["oidc"].social and not types["oauth2"].social


@pytest.fixture
def moved_to_upstream(settings, upstream):
    d = upstream.discovery
    settings.IDP_BROKER_PRESET_URLS = {
        "google": {"https://accounts.google.com/o/oauth2/v2/auth": d["authorization_endpoint"],
                   "https://oauth2.googleapis.com/token": d["token_endpoint"],
                   "https://openidconnect.googleapis.com/v1/userinfo": d["userinfo_endpoint"],
                   "https://www.googleapis.com/oauth2/v3/certs": d["jwks_uri"],
                   "https://accounts.google.com": upstream.issuer},
        "gitlab": {"https://gitlab.com/oauth/authorize": d["authorization_endpoint"],
                   "https://gitlab.com/oauth/token": d["token_endpoint"],
                   "https://gitlab.com/api/v4/user": d["userinfo_endpoint"],
                   "https://gitlab.com/oauth/discovery/keys": d["jwks_uri"], "https://gitlab.com": upstream.issuer},
        "microsoft": {"https://login.microsoftonline.com/common/oauth2/v2.0/authorize": d["authorization_endpoint"],
                      "https://login.microsoftonline.com/common/oauth2/v2.0/token": d["token_endpoint"],
                      "https://graph.microsoft.com/v1.0/me/": d["userinfo_endpoint"]},
    }


def preset(make_idp, upstream, provider_id, fields=None, alias="upstream", **config):
    client = upstream.register(REDIRECT_URI.replace("/upstream/", f"/{alias}/"),
                               token_endpoint_auth_method="client_secret_post")
    return make_idp({"clientId": client["client_id"], "clientSecret": client["client_secret"], **config},
                    provider_id=provider_id, fields=fields, alias=alias)


def test_google(moved_to_upstream, make_idp, upstream, trip, sign_in):
    idp = preset(make_idp, upstream, "google", fields={"trust_email": True}, offlineAccess="true")
    broker, url = trip(idp)
    query = query_of(url)
    assert query["scope"] == "openid profile email" and query["access_type"] == "offline" and query["nonce"]
    _, identity = sign_in(idp, "ada")
    assert (identity.id, identity.username, identity.email, identity.email_verified) == (
        "ada", "ada", "ada@upstream.example", True)
    assert identity.session_notes["FEDERATED_ID_TOKEN"]


def test_google_hosted_domain(moved_to_upstream, make_idp, upstream, trip, sign_in):
    idp = preset(make_idp, upstream, "google", hostedDomain="example.com")
    assert query_of(trip(idp)[1])["hd"] == "example.com"
    with pytest.raises(BrokerError) as caught:
        sign_in(idp, "ada")  # the upstream's ID token has no hd claim of example.com
    assert caught.value.error == "invalid_hd"


def test_google_checks_the_id_token_issuer(moved_to_upstream, settings, make_idp, upstream, sign_in):
    settings.IDP_BROKER_PRESET_URLS["google"].pop("https://accounts.google.com")  # Google's own issuer expected
    idp = preset(make_idp, upstream, "google")
    with pytest.raises(BrokerError) as caught:
        sign_in(idp, "ada")
    assert "issuer" in caught.value.detail


def test_gitlab(moved_to_upstream, make_idp, upstream, trip, sign_in):
    idp = preset(make_idp, upstream, "gitlab")
    assert query_of(trip(idp)[1])["scope"] == "openid read_user"
    _, identity = sign_in(idp, "linus")
    assert (identity.id, identity.username, identity.email) == ("linus", "linus", "linus@upstream.example")
    assert identity.claims["username"] == "linus"


def test_microsoft_graph_profile(moved_to_upstream, make_idp, upstream, trip, sign_in):
    query = query_of(trip(preset(make_idp, upstream, "microsoft"))[1])
    assert query["scope"] == "User.read" and "nonce" not in query
    # oidc-provider's /me (Graph's stand-in) answers tokens with the openid scope only.
    idp = preset(make_idp, upstream, "microsoft", defaultScope="openid User.read", alias="ms")
    _, identity = sign_in(idp, "satya")
    assert (identity.id, identity.username, identity.email) == ("satya", "satya@upstream.example",
                                                                 "satya@upstream.example")
    assert (identity.first_name, identity.last_name) == ("Satya", "Upstream")
    assert identity.session_notes == {}


def test_microsoft_tenant(make_idp, trip):
    idp = make_idp({"clientId": "app", "clientSecret": "s", "tenantId": "contoso"}, provider_id="microsoft")
    assert trip(idp)[1].startswith("https://login.microsoftonline.com/contoso/oauth2/v2.0/authorize?")


def test_preset_urls_must_stay_on_loopback(settings, make_idp, trip):
    settings.IDP_BROKER_PRESET_URLS = {"google": {"https://accounts.google.com/o/oauth2/v2/auth": "https://evil.test/a"}}
    idp = make_idp({"clientId": "app", "clientSecret": "s"}, provider_id="google")
    with pytest.raises(ImproperlyConfigured):
        trip(idp)


def test_preset_endpoints_are_built_in():
    with pytest.raises(ValueError, match="authorizationUrl"):
        get_provider_type("google").clean_config({"clientId": "a", "authorizationUrl": "https://evil.test/"})
    with pytest.raises(ValueError, match="clientId"):
        get_provider_type("facebook").clean_config({"clientSecret": "s"})
    with pytest.raises(ValueError, match="key"):
        get_provider_type("stackoverflow").clean_config({"clientId": "a"})


# GitHub and Facebook: their documented shapes from a loopback server --------------------------

def github_routes(server, *, public_email=None):
    server.routes["/login/oauth/access_token"] = (200, {"access_token": "gho_1", "token_type": "bearer",
                                                        "scope": "user:email"})
    server.routes["/user"] = (200, {"login": "octocat", "id": 583231, "name": "The Octocat", "email": public_email,
                                    "company": "@github", "type": "User"})
    server.routes["/user/emails"] = (200, [{"email": "other@example.com", "primary": False, "verified": True},
                                           {"email": "octocat@github.com", "primary": True, "verified": True}])


def test_github(json_server, make_idp, trip, answer):
    github_routes(json_server)
    idp = make_idp({"clientId": "gh-app", "clientSecret": "gh-secret", "baseUrl": json_server.base,
                    "apiUrl": json_server.base + "/"}, provider_id="github")
    broker, url = trip(idp)
    assert url.startswith(f"{json_server.base}/login/oauth/authorize?") and query_of(url)["scope"] == "user:email"
    identity = answer(idp, broker, f"{broker.redirect_uri}?code=gh-code&state={broker.state}")
    assert (identity.id, identity.username, identity.email) == ("583231", "octocat", "octocat@github.com")
    assert (identity.first_name, identity.last_name) == ("The", "Octocat") and identity.claims["company"] == "@github"
    token_call = json_server.hits("/login/oauth/access_token")[0]
    assert token_call["form"]["code"] == ["gh-code"] and token_call["form"]["client_secret"] == ["gh-secret"]
    assert json_server.hits("/user")[0]["headers"]["Authorization"] == "Bearer gho_1"


def test_github_public_email_and_form_encoded_token(json_server, make_idp, trip, answer):
    github_routes(json_server, public_email="public@example.com")
    json_server.routes["/login/oauth/access_token"] = (
        200, "access_token=gho_2&scope=user%3Aemail&token_type=bearer")  # GitHub's default encoding
    idp = make_idp({"clientId": "gh-app", "clientSecret": "gh-secret", "baseUrl": json_server.base,
                    "apiUrl": json_server.base}, provider_id="github")
    broker, _ = trip(idp)
    json_server.requests.clear()
    identity = answer(idp, broker, f"{broker.redirect_uri}?code=c&state={broker.state}")
    assert identity.email == "public@example.com" and not json_server.hits("/user/emails")


def test_facebook(json_server, settings, make_idp, trip, answer):
    base = json_server.base
    settings.IDP_BROKER_PRESET_URLS = {"facebook": {"https://graph.facebook.com": base}}
    json_server.routes["/oauth/access_token"] = (200, {"access_token": "EAAB", "token_type": "bearer",
                                                       "expires_in": 5183944})
    json_server.routes["/me"] = (200, {"id": "10158", "name": "Mark Fb", "email": "mark@example.com",
                                       "first_name": "Mark", "last_name": "Fb", "birthday": "01/01/1990"})
    idp = make_idp({"clientId": "fb-app", "clientSecret": "fb-secret", "fetchedFields": "birthday"},
                   provider_id="facebook", fields={"trust_email": True})
    broker, url = trip(idp)
    assert url.startswith(f"{base}/oauth/authorize?") and query_of(url)["scope"] == "email"
    identity = answer(idp, broker, f"{broker.redirect_uri}?code=fb&state={broker.state}")
    assert (identity.id, identity.username, identity.email, identity.email_verified) == (
        "10158", "mark@example.com", "mark@example.com", True)
    assert identity.claims["birthday"] == "01/01/1990"
    assert json_server.hits("/me")[0]["query"]["fields"] == ["id,name,email,first_name,last_name,birthday"]


# Sign in with Apple: form_post, a JWT client secret, the user's name posted once ----------------

@pytest.fixture
def apple(settings, upstream, make_idp):
    d = upstream.discovery
    settings.IDP_BROKER_PRESET_URLS = {"apple": {"https://appleid.apple.com/auth/authorize": d["authorization_endpoint"],
                                                 "https://appleid.apple.com/auth/token": d["token_endpoint"],
                                                 "https://appleid.apple.com/auth/keys": d["jwks_uri"],
                                                 "https://appleid.apple.com": upstream.issuer}}
    return make_idp({"clientId": "apple-app", "clientSecret": upstream.apple_secret}, provider_id="apple",
                    alias="apple", fields={"trust_email": True})


def test_apple_form_post_sign_in(apple, upstream, trip, rf, realm):
    broker, url = trip(apple)
    query = query_of(url)
    assert query["response_mode"] == "form_post" and query["scope"] == "openid name email" and query["nonce"]
    action, fields = upstream.sign_in(url, "tim")
    assert action == broker.redirect_uri and fields["state"] == broker.state and fields["code"]
    request = rf.post("/realms/acme/broker/apple/endpoint", {
        **fields, "user": '{"name": {"firstName": "Tim", "lastName": "Cook"}, "email": "tim@privaterelay.example"}'})
    identity = get_provider_type("apple").authenticated(request, realm, apple, broker)
    assert (identity.id, identity.email, identity.email_verified) == ("tim", "tim@upstream.example", True)
    assert (identity.first_name, identity.last_name) == ("Tim", "Cook")  # from Apple's one-time user field


def test_apple_cross_site_post_is_posted_again_from_our_page(apple, rf, realm):
    request = rf.post("/realms/acme/broker/apple/endpoint", {"state": "s.t.c", "code": "c-1"},
                      HTTP_SEC_FETCH_SITE="cross-site")
    page = get_provider_type("apple").endpoint(request, realm, apple, "")
    assert page.status_code == 200 and 'value="c-1"' in page.content.decode()
    same_origin = rf.post("/realms/acme/broker/apple/endpoint", {"state": "s.t.c", "code": "c-1"},
                          HTTP_SEC_FETCH_SITE="same-origin")
    assert get_provider_type("apple").endpoint(same_origin, realm, apple, "") is None  # the broker's own handling


def test_apple_client_secret(make_idp, trip):
    apple = get_provider_type("apple")
    with pytest.raises(ValueError, match="p8Content"):
        apple.clean_config({"clientId": "a", "p8Content": "-----BEGIN PRIVATE KEY-----", "teamId": "T", "keyId": "K"})
    with pytest.raises(ValueError, match="clientSecret is required"):
        apple.clean_config({"clientId": "a"})
    idp = make_idp({"clientId": "a", "clientSecret": "not-a-jwt"}, provider_id="apple", alias="apple")
    with pytest.raises(BrokerError, match="unexpired JWT"):
        trip(idp)
