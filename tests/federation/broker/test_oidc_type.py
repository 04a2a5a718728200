"""The ``oidc`` identity provider type against panva's oidc-provider: the redirect we send, the
code exchanged with each client authentication, PKCE, the ID token and userinfo read into the
brokered identity."""
import json

import pytest

from realms.brokering.providers import BrokerError

from .conftest import STATE, query_of


def test_login_redirect_carries_state_nonce_and_pkce(oidc_idp, trip, upstream):
    idp = oidc_idp(pkceEnabled="true", pkceMethod="S256", loginHint="true", passMaxAge="true")
    broker, url = trip(idp, login_hint="ada@upstream.example", max_age="60", prompt="login")
    assert url.startswith(upstream.discovery["authorization_endpoint"] + "?")
    query = query_of(url)
    assert query["state"] == STATE and query["response_type"] == "code"
    assert query["client_id"] == idp.config["clientId"] and query["redirect_uri"] == broker.redirect_uri
    assert query["scope"] == "openid email profile"
    assert query["nonce"] == broker.notes["nonce"] and len(query["nonce"]) >= 20
    assert query["code_challenge_method"] == "S256" and broker.notes["code_verifier"]
    assert query["login_hint"] == "ada@upstream.example" and query["max_age"] == "60" and query["prompt"] == "login"


def test_hints_not_forwarded_unless_configured(oidc_idp, trip):
    idp = oidc_idp(defaultScope="email")
    _, url = trip(idp, login_hint="ada", max_age="60", prompt="none")
    query = query_of(url)
    assert query["scope"] == "openid email"  # openid always asked for
    assert not {"login_hint", "max_age", "prompt", "code_challenge"} & set(query)


def test_prompt_none_forwarded_when_accepted(oidc_idp, trip):
    idp = oidc_idp(acceptsPromptNoneForwardFromClient="true")
    assert query_of(trip(idp, prompt="none")[1])["prompt"] == "none"


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post", "client_secret_jwt"])
def test_sign_in_with_each_secret_client_authentication(oidc_idp, sign_in, method):
    idp = oidc_idp({"token_endpoint_auth_method": method}, fields={"store_token": True}, clientAuthMethod=method,
                   pkceEnabled="true")
    broker, identity = sign_in(idp, "ada")
    assert identity.id == "ada" and identity.username == "ada"
    assert identity.email == "ada@upstream.example" and identity.email_verified is False  # not trusted
    assert (identity.first_name, identity.last_name) == ("Ada", "Upstream")
    assert identity.claims["groups"] == ["staff", "dev"] and identity.claims["nonce"] == broker.notes["nonce"]
    tokens = json.loads(identity.token)
    assert tokens["id_token"] == identity.session_notes["FEDERATED_ID_TOKEN"] and tokens["access_token"]
    assert identity.session_notes["FEDERATED_SUB"] == "ada" and identity.session_notes["FEDERATED_SID"]


def test_private_key_jwt_with_the_realm_key(oidc_idp, sign_in, realm):
    from realms.data.keys import realm_keys

    kid, key = realm_keys(realm).signer("RS256")
    public = key.export_public(as_dict=True)
    public.update(kid=kid, alg="RS256", use="sig")
    idp = oidc_idp({"token_endpoint_auth_method": "private_key_jwt", "jwks": {"keys": [public]},
                    "token_endpoint_auth_signing_alg": "RS256"}, clientAuthMethod="private_key_jwt", clientSecret="")
    _, identity = sign_in(idp, "grace")
    assert identity.id == "grace"


def test_trusted_email_is_verified(oidc_idp, sign_in):
    idp = oidc_idp(fields={"trust_email": True})
    _, identity = sign_in(idp, "ada")
    assert identity.email_verified is True and identity.token == ""  # tokens not stored


def test_wrong_secret_refused(oidc_idp, sign_in):
    idp = oidc_idp(clientSecret="not-the-secret")
    with pytest.raises(BrokerError) as caught:
        sign_in(idp)
    assert caught.value.message_key == "identityProviderUnexpectedErrorMessage"
    assert "401" in caught.value.detail or "invalid_client" in caught.value.detail


def test_pkce_verifier_checked_upstream(oidc_idp, trip, upstream, answer):
    idp = oidc_idp(pkceEnabled="true")
    broker, url = trip(idp)
    back = upstream.sign_in(url)
    broker.notes["code_verifier"] = "x" * 60  # not the one whose challenge was sent
    with pytest.raises(BrokerError) as caught:
        answer(idp, broker, back)
    assert "invalid_grant" in caught.value.detail


def test_provider_error_answer(oidc_idp, answer, trip):
    idp = oidc_idp()
    broker, _ = trip(idp)
    with pytest.raises(BrokerError) as caught:
        answer(idp, broker, f"{broker.redirect_uri}?error=access_denied&error_description=<b>no</b>&state={STATE}")
    assert caught.value.error == "access_denied" and caught.value.message_key == "accessDeniedWhenIdpAuth"


def test_import_config_from_discovery(upstream):
    from realms.brokering.providers import get_provider_type
    from realms.http import outbound

    document = outbound.fetch(f"{upstream.issuer}/.well-known/openid-configuration")
    config = get_provider_type("oidc").import_config(document)
    assert config == {"authorizationUrl": f"{upstream.issuer}/auth", "tokenUrl": f"{upstream.issuer}/token",
                      "userInfoUrl": f"{upstream.issuer}/me", "issuer": upstream.issuer,
                      "logoutUrl": f"{upstream.issuer}/session/end", "jwksUrl": f"{upstream.issuer}/jwks",
                      "validateSignature": "true", "useJwksUrl": "true", "backchannelSupported": "true"}


def test_no_secret_or_token_in_the_log(oidc_idp, sign_in, caplog, make_idp):
    """A failed exchange and a userinfo URL carrying a token leave neither in the log or the error."""
    import logging

    caplog.set_level(logging.DEBUG)
    idp = oidc_idp(clientSecret="very-secret-value-1234567890abcdef")
    with pytest.raises(BrokerError) as caught:
        sign_in(idp)
    so = make_idp({"clientId": "c", "clientSecret": "s", "key": "k"}, provider_id="stackoverflow", alias="so")
    from realms.brokering.providers import get_provider_type

    settings = get_provider_type("stackoverflow").settings(so)
    settings.config["userInfoUrl"] = "http://127.0.0.1:1/me?site=stackoverflow"  # nothing listens there
    with pytest.raises(BrokerError) as unreachable:
        get_provider_type("stackoverflow").profile(settings, {"access_token": "leaky-token"})
    text = caplog.text + caught.value.detail + unreachable.value.detail
    assert "very-secret-value" not in text and "leaky-token" not in text
