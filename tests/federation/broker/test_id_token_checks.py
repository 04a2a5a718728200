"""Every check of the provider's ID token refuses what breaks it: the signature (the provider's
JWKS, fetched again for an unknown kid, or a configured key), ``iss``, ``aud``, ``azp``, the
nonce, the lifetime with ``allowedClockSkew``, ``alg`` none, HMAC with a public key, userinfo
naming another ``sub``. The provider here is a loopback server answering the token, userinfo and
JWKS documents the test signs."""
import base64
import json

import pytest
from jwcrypto import jwk, jws
from jwcrypto.common import json_encode

from federation.broker import jose
from realms.brokering.providers import BrokerError

from .upstream import now

ISSUER = "https://upstream.test"
CLIENT = "our-client"
SECRET = "s3cret-value-long-enough-for-hs256"


def sign(claims, key, alg="RS256", kid="k1", **header):
    token = jws.JWS(json_encode(claims))
    token.add_signature(key, alg=alg, protected=json_encode({"alg": alg, "kid": kid, **header} if kid else
                                                            {"alg": alg, **header}))
    return token.serialize(compact=True)


def unsigned(claims):
    def part(data):
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part(claims)}."


def public(key, kid):
    data = key.export_public(as_dict=True)
    data.update(kid=kid, use="sig")
    return data


@pytest.fixture(scope="module")
def keys():
    return {"k1": jwk.JWK.generate(kty="RSA", size=2048), "k2": jwk.JWK.generate(kty="RSA", size=2048),
            "ec": jwk.JWK.generate(kty="EC", crv="P-256")}


@pytest.fixture
def provider(json_server, make_idp, keys, trip, answer):
    """A provider at the JSON server; ``provider.answer_with(id_token, userinfo=None, **config)`` runs one
    trip whose token response carries ``id_token`` -> BrokeredIdentity (or raises BrokerError)."""
    base = json_server.base
    json_server.routes["/jwks"] = (200, {"keys": [public(keys["k1"], "k1"), public(keys["ec"], "ec")]})

    class Provider:
        made = 0

        def claims(self, broker, **changes):
            values = {"iss": ISSUER, "aud": CLIENT, "sub": "u-1", "iat": now(), "exp": now() + 300,
                      "nonce": broker.notes.get("nonce"), "email": "u1@upstream.test", "email_verified": True,
                      "name": "Una Upstream", "preferred_username": "una", **changes}
            return {k: v for k, v in values.items() if v is not None}

        def idp(self, **config):
            values = {"authorizationUrl": f"{base}/auth", "tokenUrl": f"{base}/token", "userInfoUrl": f"{base}/userinfo",
                      "jwksUrl": f"{base}/jwks", "issuer": ISSUER, "clientId": CLIENT, "clientSecret": SECRET,
                      "validateSignature": "true", "useJwksUrl": "true", **config}
            self.made += 1
            return make_idp({k: v for k, v in values.items() if v is not None}, alias=f"upstream-{self.made}")

        def run(self, make_token, userinfo=None, idp=None, **config):
            idp = idp or self.idp(**config)
            broker, _ = trip(idp)
            json_server.routes["/token"] = (200, {"access_token": "at-1", "token_type": "Bearer",
                                                  "id_token": make_token(broker)})
            if userinfo is not None:
                json_server.routes["/userinfo"] = (200, userinfo)
            return answer(idp, broker, f"{broker.redirect_uri}?code=c-1&state={broker.state}")

    return Provider()


def refused(run, *args, **kwargs):
    with pytest.raises(BrokerError) as caught:
        run(*args, **kwargs)
    assert caught.value.message_key == "identityProviderUnexpectedErrorMessage"
    return caught.value.detail


def test_valid_token_accepted_without_userinfo_when_complete(provider, keys, json_server):
    identity = provider.run(lambda b: sign(provider.claims(b), keys["k1"]))
    assert identity.id == "u-1" and identity.username == "una" and identity.email == "u1@upstream.test"
    assert not json_server.hits("/userinfo")  # the ID token had name, username and e-mail (Keycloak's rule)
    token_call = json_server.hits("/token")[0]
    assert token_call["form"]["client_id"] == [CLIENT] and token_call["form"]["client_secret"] == [SECRET]
    assert token_call["form"]["grant_type"] == ["authorization_code"] and token_call["form"]["code"] == ["c-1"]


def test_es256_key_of_the_jwks(provider, keys):
    assert provider.run(lambda b: sign(provider.claims(b), keys["ec"], "ES256", "ec")).id == "u-1"


def test_bad_signature(provider, keys):
    detail = refused(provider.run, lambda b: sign(provider.claims(b), keys["k2"], kid="k1"))
    assert "signature" in detail


def test_tampered_payload(provider, keys):
    def token(b):
        header, _, signature = sign(provider.claims(b), keys["k1"]).split(".")
        other = base64.urlsafe_b64encode(json.dumps(provider.claims(b, sub="admin")).encode()).rstrip(b"=").decode()
        return f"{header}.{other}.{signature}"

    assert "signature" in refused(provider.run, token)


@pytest.mark.parametrize("changes, words", [
    ({"iss": "https://evil.test"}, "issuer"),
    ({"aud": "another-client"}, "audience"),
    ({"aud": [CLIENT, "other"], "azp": "other"}, "authorized party"),
    ({"aud": [CLIENT, "other"]}, "azp"),
    ({"nonce": "not-the-nonce"}, "nonce"),
    ({"nonce": None}, "nonce"),
    ({"exp": None}, "exp"),
    ({"exp": now() - 60}, "expired"),
    ({"iat": now() + 600}, "future"),
    ({"sub": None}, "sub"),
    ({"typ": "Bearer"}, "typ"),
])
def test_claim_checks(provider, keys, changes, words):
    detail = refused(provider.run, lambda b: sign(provider.claims(b, **{k: (now() - 60 if k == "exp" and v else v)
                                                                          for k, v in changes.items()}), keys["k1"]))
    assert words in detail


def test_clock_skew_allows_a_just_expired_token(provider, keys):
    assert provider.run(lambda b: sign(provider.claims(b, exp=now() - 20), keys["k1"]), allowedClockSkew="60").id
    assert "expired" in refused(provider.run, lambda b: sign(provider.claims(b, exp=now() - 20), keys["k1"]),
                                allowedClockSkew="5")


def test_type_claim_check_can_be_disabled(provider, keys):
    assert provider.run(lambda b: sign(provider.claims(b, typ="Bearer"), keys["k1"]), disableTypeClaimCheck="true").id
    assert provider.run(lambda b: sign(provider.claims(b, typ="ID"), keys["k1"])).id == "u-1"


def test_nonce_not_checked_when_disabled(provider, keys, trip):
    idp = provider.idp(disableNonce="true")
    assert "nonce" not in trip(idp)[1]
    assert provider.run(lambda b: sign(provider.claims(b, nonce="whatever"), keys["k1"]), idp=idp).id == "u-1"


def test_alg_none_refused_even_without_signature_validation(provider):
    assert "alg none" in refused(provider.run, lambda b: unsigned(provider.claims(b)))
    assert "alg none" in refused(provider.run, lambda b: unsigned(provider.claims(b)), validateSignature="false")


def test_hmac_signed_with_the_public_key_refused(provider, keys):
    """The key confusion attack: HS256 "keyed" with the provider's public key bytes."""
    pem = keys["k1"].export_to_pem()
    confused = jwk.JWK(kty="oct", k=base64.urlsafe_b64encode(pem).rstrip(b"=").decode())
    assert "signature" in refused(provider.run, lambda b: sign(provider.claims(b), confused, "HS256"))


def test_hmac_with_the_client_secret_accepted(provider):
    secret = jwk.JWK(kty="oct", k=base64.urlsafe_b64encode(SECRET.encode()).rstrip(b"=").decode())
    assert provider.run(lambda b: sign(provider.claims(b), secret, "HS256", kid=None)).id == "u-1"


def test_unknown_kid_fetches_the_jwks_again(provider, keys, json_server, monkeypatch):
    monkeypatch.setattr(jose, "MIN_REFRESH_SECONDS", 0)
    assert provider.run(lambda b: sign(provider.claims(b), keys["k1"])).id == "u-1"
    assert provider.run(lambda b: sign(provider.claims(b), keys["k1"])).id == "u-1"
    assert len(json_server.hits("/jwks")) == 1  # cached
    json_server.routes["/jwks"] = (200, {"keys": [public(keys["k2"], "k2")]})  # the provider rotated its key
    assert provider.run(lambda b: sign(provider.claims(b), keys["k2"], kid="k2")).id == "u-1"
    assert len(json_server.hits("/jwks")) == 2


def test_unknown_kids_do_not_flood_the_provider(provider, keys, json_server):
    assert provider.run(lambda b: sign(provider.claims(b), keys["k1"])).id == "u-1"
    for kid in ("made-up-1", "made-up-2"):
        assert "no key" in refused(provider.run, lambda b, kid=kid: sign(provider.claims(b), keys["k2"], kid=kid))
    assert len(json_server.hits("/jwks")) == 1  # within MIN_REFRESH_SECONDS: not fetched again


def test_configured_key(provider, keys, json_server):
    pem = keys["k1"].export_to_pem().decode()
    body = "".join(pem.splitlines()[1:-1])  # as the console stores it: the base64 without PEM lines
    identity = provider.run(lambda b: sign(provider.claims(b), keys["k1"], kid="any"), useJwksUrl="false",
                            jwksUrl=None, publicKeySignatureVerifier=body)
    assert identity.id == "u-1" and not json_server.hits("/jwks")
    detail = refused(provider.run, lambda b: sign(provider.claims(b), keys["k1"], kid="other"), useJwksUrl="false",
                     jwksUrl=None, publicKeySignatureVerifier=pem, publicKeySignatureVerifierKeyId="k1")
    assert "no key" in detail


def test_userinfo_sub_must_match(provider, keys, json_server):
    def incomplete(b):
        return sign(provider.claims(b, name=None), keys["k1"])

    identity = provider.run(incomplete, userinfo={"sub": "u-1", "name": "Una Upstream", "locale": "en"})
    assert identity.claims["locale"] == "en" and identity.first_name == "Una"
    assert json_server.hits("/userinfo")[0]["headers"]["Authorization"] == "Bearer at-1"
    assert "userinfo" in refused(provider.run, incomplete, userinfo={"sub": "u-2", "name": "Mallory"})


def test_signed_userinfo_checked(provider, keys, json_server):
    def incomplete(b):
        return sign(provider.claims(b, name=None), keys["k1"])

    good = sign({"sub": "u-1", "name": "Una Upstream"}, keys["k1"])
    assert provider.run(incomplete, userinfo=good).first_name == "Una"
    forged = sign({"sub": "u-1", "name": "Una Upstream"}, keys["k2"], kid="k1")
    assert "signature" in refused(provider.run, incomplete, userinfo=forged)


def test_userinfo_disabled(provider, keys, json_server):
    identity = provider.run(lambda b: sign(provider.claims(b, name=None), keys["k1"]), disableUserInfo="true")
    assert identity.id == "u-1" and not json_server.hits("/userinfo")


def test_token_endpoint_error(provider, json_server, trip, answer):
    idp = provider.idp()
    broker, _ = trip(idp)
    json_server.routes["/token"] = (400, {"error": "invalid_grant", "error_description": "<script>"})
    with pytest.raises(BrokerError) as caught:
        answer(idp, broker, f"{broker.redirect_uri}?code=c-1&state={broker.state}")
    assert "400 invalid_grant" in caught.value.detail


def test_no_id_token(provider, json_server, trip, answer):
    idp = provider.idp()
    broker, _ = trip(idp)
    json_server.routes["/token"] = (200, {"access_token": "at-1"})
    with pytest.raises(BrokerError) as caught:
        answer(idp, broker, f"{broker.redirect_uri}?code=c-1&state={broker.state}")
    assert "id_token" in caught.value.detail


def test_a_configured_key_wins_when_use_jwks_url_is_unset(provider, keys, json_server):
    """Keycloak's useJwksUrl is off unless set: a provider imported with its key pinned and a
    JWKS URL beside it is checked against the pinned key, never the URL's keys."""
    pinned = keys["k2"].export_to_pem().decode()
    identity = provider.run(lambda b: sign(provider.claims(b), keys["k2"], kid="k2"), useJwksUrl=None,
                            publicKeySignatureVerifier=pinned)
    assert identity.id == "u-1" and not json_server.hits("/jwks")
    assert "no key" in refused(provider.run, lambda b: sign(provider.claims(b), keys["k1"]), useJwksUrl=None,
                               publicKeySignatureVerifier=pinned, publicKeySignatureVerifierKeyId="k2")
