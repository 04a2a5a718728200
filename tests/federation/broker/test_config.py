"""What the OIDC and OAuth 2 types accept in their config: Keycloak's keys, each taking effect;
keys of features this server lacks, unknown keys and bad values refused with a message an admin
reads. And the generic ``oauth2`` type reading its user by the configured claim paths."""
import pytest

from realms.brokering.providers import get_provider_type

from .conftest import query_of

BASE = {"authorizationUrl": "https://up.test/auth", "tokenUrl": "https://up.test/token", "clientId": "c",
        "clientSecret": "s"}


def clean(provider_id="oidc", **config):
    return get_provider_type(provider_id).clean_config({**BASE, **config})


def test_keycloak_keys_accepted():
    cleaned = clean(userInfoUrl="https://up.test/me", jwksUrl="https://up.test/jwks", issuer="https://up.test",
                    logoutUrl="https://up.test/logout", clientAuthMethod="client_secret_jwt",
                    clientAssertionSigningAlg="HS512", defaultScope="openid email", pkceEnabled="true",
                    pkceMethod="plain", validateSignature="true", useJwksUrl="true", disableUserInfo="false",
                    disableNonce="false", backchannelSupported="true", sendIdTokenOnLogout="true",
                    sendClientIdOnLogout="false", loginHint="true", passMaxAge="true", uiLocales="true",
                    prompt="consent", acceptsPromptNoneForwardFromClient="false", allowedClockSkew="30",
                    syncMode="FORCE", guiOrder="2", hideOnLoginPage="false", isAccessTokenJWT="false",
                    forwardParameters="", filteredByClaim="false", claimFilterName="", claimFilterValue="",
                    supportsClientAssertions="false", requiresShortStateParameter="false")
    assert cleaned["clientAuthMethod"] == "client_secret_jwt" and cleaned["allowedClockSkew"] == "30"
    assert get_provider_type("keycloak-oidc").clean_config(BASE)["clientId"] == "c"


@pytest.mark.parametrize("config, message", [
    ({"clientId": ""}, "clientId is required"),
    ({"tokenUrl": ""}, "tokenUrl is required"),
    ({"authorizationUrl": "javascript:alert(1)"}, "authorizationUrl must be an http or https URL"),
    ({"jwksUrl": "ftp://up.test/jwks"}, "jwksUrl must be an http or https URL"),
    ({"clientAuthMethod": "tls_client_auth"}, "clientAuthMethod must be one of"),
    ({"clientAuthMethod": "client_secret_jwt", "clientAssertionSigningAlg": "RS256"}, "for client_secret_jwt"),
    ({"clientAuthMethod": "private_key_jwt", "clientAssertionSigningAlg": "HS256"}, "for private_key_jwt"),
    ({"pkceMethod": "S512"}, "pkceMethod must be one of"),
    ({"prompt": "sometimes"}, "prompt must be one of"),
    ({"allowedClockSkew": "-5"}, "allowedClockSkew"),
    ({"pkceEnabled": "yes"}, "pkceEnabled must be true or false"),
    ({"validateSignature": "true"}, "jwksUrl is required"),
    ({"validateSignature": "true", "useJwksUrl": "false"}, "publicKeySignatureVerifier is required"),
    ({"publicKeySignatureVerifier": "not a key"}, "publicKeySignatureVerifier"),
    ({"forwardParameters": "acr_values"}, "forwardParameters: forwarding request parameters"),
    ({"isAccessTokenJWT": "true"}, "token exchange"),
    ({"useMetadataDescriptorUrl": "true"}, "metadataDescriptorUrl is not supported"),
    ({"filteredByClaim": "true"}, "claimFilterName is required"),
    ({"filteredByClaim": "true", "claimFilterName": "groups", "claimFilterValue": "("}, "regular expression"),
    ({"tokenIntrospectionUrl": "https://up.test/introspect"}, "token exchange"),
    ({"requiresShortStateParameter": "true"}, "short state"),
    ({"somethingElse": "x"}, "Unsupported configuration for an OpenID Connect identity provider: somethingElse"),
    ({"userIDClaim": "id"}, "Unsupported configuration"),  # the OAuth 2 type's key
])
def test_refusals(config, message):
    with pytest.raises(ValueError, match=message):
        clean(**config)


def test_oauth2_keys():
    cleaned = clean("oauth2", userInfoUrl="https://up.test/me", userIDClaim="data.id", userNameClaim="data.login")
    assert cleaned["userIDClaim"] == "data.id"
    with pytest.raises(ValueError, match="userInfoUrl is required"):
        clean("oauth2")
    with pytest.raises(ValueError, match="Unsupported configuration for an OAuth 2 identity provider: jwksUrl"):
        clean("oauth2", userInfoUrl="https://up.test/me", jwksUrl="https://up.test/jwks")


def test_ui_locales_and_configured_prompt(oidc_idp, trip):
    idp = oidc_idp(uiLocales="true", prompt="consent")
    query = query_of(trip(idp, locale="de", prompt="login")[1])
    assert query["ui_locales"] == "de" and query["prompt"] == "consent"  # the configured prompt wins
    idp.config = {**idp.config, "prompt": "unspecified"}  # Keycloak's "send none"
    assert "prompt" not in query_of(trip(idp, prompt="login")[1])


def test_keycloak_oidc_signs_in_like_oidc(oidc_idp, sign_in):
    _, identity = sign_in(oidc_idp(provider_id="keycloak-oidc"), "kc")
    assert identity.id == "kc" and identity.session_notes["FEDERATED_ID_TOKEN"]


def test_generic_oauth2_reads_the_configured_claim_paths(json_server, make_idp, trip, answer):
    base = json_server.base
    json_server.routes["/token"] = (200, {"access_token": "at-9", "token_type": "Bearer"})
    json_server.routes["/me"] = (200, {"data": {"id": 42, "login": "grace", "mail": "grace@up.test",
                                                "names": {"full": "Grace Brewster Hopper"}}})
    idp = make_idp({"authorizationUrl": f"{base}/auth", "tokenUrl": f"{base}/token", "userInfoUrl": f"{base}/me",
                    "clientId": "c", "clientSecret": "s", "clientAuthMethod": "client_secret_basic",
                    "defaultScope": "read", "userIDClaim": "data.id", "userNameClaim": "data.login",
                    "emailClaim": "data.mail", "fullNameClaim": "data.names.full"}, provider_id="oauth2",
                   fields={"trust_email": True})
    broker, url = trip(idp)
    assert query_of(url)["scope"] == "read" and "nonce" not in query_of(url)
    identity = answer(idp, broker, f"{broker.redirect_uri}?code=c-9&state={broker.state}")
    assert (identity.id, identity.username, identity.email, identity.email_verified) == (
        "42", "grace", "grace@up.test", True)
    assert (identity.first_name, identity.last_name) == ("Grace", "Brewster Hopper")
    assert json_server.hits("/token")[0]["headers"]["Authorization"].startswith("Basic ")
    assert "client_secret" not in json_server.hits("/token")[0]["form"]


def test_filtered_by_claim(oidc_idp, sign_in):
    """Only a user whose claim matches the filter in full signs in (the upstream's groups: staff, dev)."""
    from realms.brokering.providers import BrokerError

    idp = oidc_idp(filteredByClaim="true", claimFilterName="groups", claimFilterValue="de.")
    assert sign_in(idp)[1].id == "ada"
    idp.config = {**idp.config, "claimFilterValue": "d"}  # a full match, not a search
    with pytest.raises(BrokerError) as caught:
        sign_in(idp)
    assert caught.value.error == "invalid_claim"
