"""The provider's back-channel logout (OpenID Back-Channel Logout 1.0 §2.6) at
``/broker/{alias}/endpoint/backchannel_logout``: a logout token that breaks a rule is refused with
400 and ends nothing; a good one ends the sessions signed in through that provider with its
``sid`` (or every one of its ``sub``), and only those. The provider's keys are a JWKS the test
serves on loopback."""
import json
import uuid

import pytest
from jwcrypto import jwk

from realms.brokering.providers import get_provider_type
from realms.models import UserSession
from realms.sso.sessions import create_user_session
from realms.users.accounts import create_user

from .test_id_token_checks import CLIENT, ISSUER, public, sign, unsigned
from .upstream import now

EVENT = {"http://schemas.openid.net/event/backchannel-logout": {}}


@pytest.fixture(scope="module")
def key():
    return jwk.JWK.generate(kty="RSA", size=2048)


@pytest.fixture
def idp(json_server, make_idp, key):
    json_server.routes["/jwks"] = (200, {"keys": [public(key, "k1")]})
    base = json_server.base
    return make_idp({"authorizationUrl": f"{base}/auth", "tokenUrl": f"{base}/token", "jwksUrl": f"{base}/jwks",
                     "issuer": ISSUER, "clientId": CLIENT, "clientSecret": "x" * 32, "validateSignature": "true",
                     "useJwksUrl": "true"})


@pytest.fixture
def signed_in(realm, idp):
    """Sessions: ada through the provider twice (sid s-1 and s-2), grace through it (s-3), and
    ada's own password session (no provider)."""
    ada, grace = create_user(realm, "ada"), create_user(realm, "grace")

    def session(user, sid=None, sub=None):
        notes = {"identity_provider": idp.alias, "FEDERATED_SUB": sub, "FEDERATED_SID": sid} if sid else {}
        return create_user_session(realm, user, notes=notes).pk

    return {"s-1": session(ada, "s-1", "ada"), "s-2": session(ada, "s-2", "ada"),
            "s-3": session(grace, "s-3", "grace"), "local": session(ada)}


def post(rf, realm, idp, token, **extra):
    request = rf.post(f"/realms/acme/broker/{idp.alias}/endpoint/backchannel_logout",
                      {"logout_token": token, **extra} if token is not None else extra)
    return get_provider_type("oidc").endpoint(request, realm, idp, "backchannel_logout")


def claims(**changes):
    values = {"iss": ISSUER, "aud": CLIENT, "iat": now(), "exp": now() + 120, "jti": str(uuid.uuid4()),
              "events": EVENT, "sid": "s-1", "sub": "ada", **changes}
    return {k: v for k, v in values.items() if v is not None}


def left(signed_in):
    alive = set(UserSession.objects.values_list("pk", flat=True))
    return sorted(name for name, pk in signed_in.items() if pk in alive)


def test_the_session_named_by_sid_ends(rf, realm, idp, key, signed_in):
    answer = post(rf, realm, idp, sign(claims(), key))
    assert answer.status_code == 200 and answer["Cache-Control"] == "no-store"
    assert left(signed_in) == ["local", "s-2", "s-3"]


def test_sub_alone_ends_every_session_of_that_user_through_the_provider(rf, realm, idp, key, signed_in):
    assert post(rf, realm, idp, sign(claims(sid=None), key)).status_code == 200
    assert left(signed_in) == ["local", "s-3"]


def test_a_token_for_no_live_session_is_still_accepted(rf, realm, idp, key, signed_in):
    assert post(rf, realm, idp, sign(claims(sid="gone"), key)).status_code == 200
    assert left(signed_in) == ["local", "s-1", "s-2", "s-3"]


@pytest.mark.parametrize("changes, words", [
    ({"iss": "https://evil.test"}, "issuer"),
    ({"aud": "someone-else"}, "audience"),
    ({"iat": None}, "iat"),
    ({"exp": now() - 600}, "expired"),
    ({"jti": None}, "jti"),
    ({"events": None}, "event"),
    ({"events": {"http://schemas.openid.net/event/backchannel-logout": "yes"}}, "event"),
    ({"events": {"urn:other": {}}}, "event"),
    ({"nonce": "n-1"}, "nonce"),
    ({"sid": None, "sub": None}, "neither sid nor sub"),
])
def test_refusals(rf, realm, idp, key, signed_in, changes, words):
    answer = post(rf, realm, idp, sign(claims(**changes), key))
    assert answer.status_code == 400 and words in json.loads(answer.content)["error_description"]
    assert json.loads(answer.content)["error"] == "invalid_request" and len(left(signed_in)) == 4


def test_signature_and_alg_none(rf, realm, idp, key, signed_in):
    other = jwk.JWK.generate(kty="RSA", size=2048)
    assert post(rf, realm, idp, sign(claims(), other)).status_code == 400
    assert post(rf, realm, idp, unsigned(claims())).status_code == 400
    assert len(left(signed_in)) == 4


def test_verified_even_when_id_token_signatures_are_not(rf, realm, idp, key, signed_in):
    """validateSignature off trusts ID tokens from the token endpoint's TLS answer; a POSTed logout
    token has no such channel, so its signature is always checked."""
    idp.config = {**idp.config, "validateSignature": "false"}
    idp.save()
    other = jwk.JWK.generate(kty="RSA", size=2048)
    assert post(rf, realm, idp, sign(claims(), other)).status_code == 400
    assert post(rf, realm, idp, sign(claims(), key)).status_code == 200


def test_a_replayed_token_is_refused(rf, realm, idp, key, signed_in):
    token = sign(claims(sid="gone"), key)
    assert post(rf, realm, idp, token).status_code == 200
    answer = post(rf, realm, idp, token)
    assert answer.status_code == 400 and "already used" in json.loads(answer.content)["error_description"]


def test_malformed_requests(rf, realm, idp, signed_in):
    assert post(rf, realm, idp, None).status_code == 400
    assert post(rf, realm, idp, "not-a-jwt").status_code == 400
    get = rf.get(f"/realms/acme/broker/{idp.alias}/endpoint/backchannel_logout")
    assert get_provider_type("oidc").endpoint(get, realm, idp, "backchannel_logout").status_code == 400
    assert get_provider_type("oidc").endpoint(get, realm, idp, "elsewhere") is None  # the broker's 404


# keycloak-oidc: another Keycloak's own back-channel logout (k_logout) ---------------------------

@pytest.fixture
def keycloak_idp(json_server, make_idp, key):
    json_server.routes["/jwks"] = (200, {"keys": [public(key, "k1")]})
    base = json_server.base
    return make_idp({"authorizationUrl": f"{base}/auth", "tokenUrl": f"{base}/token", "jwksUrl": f"{base}/jwks",
                     "issuer": ISSUER, "clientId": CLIENT, "clientSecret": "x" * 32, "validateSignature": "true",
                     "useJwksUrl": "true"}, provider_id="keycloak-oidc", alias="other-keycloak")


def k_logout(rf, realm, idp, token):
    request = rf.post(f"/realms/acme/broker/{idp.alias}/endpoint/k_logout", data=token, content_type="text/plain")
    return get_provider_type("keycloak-oidc").endpoint(request, realm, idp, "k_logout")


def action(**changes):
    values = {"id": str(uuid.uuid4()), "action": "LOGOUT", "resource": CLIENT, "expiration": now() + 30,
              "notBefore": 0, "keycloakSessionIds": ["s-1", "s-3"], **changes}
    return {k: v for k, v in values.items() if v is not None}


def test_keycloak_k_logout(rf, realm, keycloak_idp, key):
    ada = create_user(realm, "ada")
    ours = {sid: create_user_session(realm, ada, notes={"identity_provider": keycloak_idp.alias,
                                                        "FEDERATED_SID": sid}).pk for sid in ("s-1", "s-2")}
    for bad in (action(action="PUSH_NOT_BEFORE"), action(resource="another"), action(expiration=now() - 5)):
        assert k_logout(rf, realm, keycloak_idp, sign(bad, key)).status_code == 400
    assert k_logout(rf, realm, keycloak_idp, sign(action(), jwk.JWK.generate(kty="RSA", size=2048))).status_code == 400
    assert UserSession.objects.filter(pk__in=ours.values()).count() == 2
    assert k_logout(rf, realm, keycloak_idp, sign(action(), key)).status_code == 200
    assert list(UserSession.objects.filter(pk__in=ours.values()).values_list("pk", flat=True)) == [ours["s-2"]]
    assert get_provider_type("oidc").endpoint(rf.post("/x"), realm, keycloak_idp, "k_logout") is None  # oidc has none
