"""Fixtures of the client policy tests: realm ``acme`` of the PAR tests with user bob, a client
``fapi`` authenticating with ``private_key_jwt`` (an EC key of its own), and helpers that put a
policy on the realm, sign client assertions and DPoP proofs."""
import time
import uuid

import pytest
from jwcrypto import jwk

from oidc import client_auth, jose
from realms.representation import client_policies as stored
from tests.oidc.browser.conftest import make_client
from tests.oidc.dpop.conftest import Prover
from tests.oidc.par.conftest import ISSUER, REDIRECT, VERIFIER, bob, realm  # noqa: F401 (fixtures)

FAPI_ROLE = "fapi"


@pytest.fixture(autouse=True)
def _fresh_cache(fresh_caches):
    pass


def put_policy(realm, profile, conditions=None, profiles=None):
    """The realm's only policy: ``profile`` (a name or a list of them) for the clients with the
    ``fapi`` client role; ``profiles``: the realm's own profiles."""
    conditions = conditions or [{"condition": "client-roles", "configuration": {"roles": [FAPI_ROLE]}}]
    profiles_doc = stored.parse_profiles(profiles or {"profiles": []})
    policies = stored.parse_policies({"policies": [{"name": "p", "enabled": True, "conditions": conditions,
                                                    "profiles": [profile] if isinstance(profile, str)
                                                    else profile}]},
                                     profile_names=[p["name"] for p in profiles_doc["profiles"]])
    realm.attributes = stored.store(realm.attributes, policies, profiles_doc)
    realm.save()


@pytest.fixture
def client_key():
    return jwk.JWK.generate(kty="EC", crv="P-256", kid="fapi-key")


@pytest.fixture
def fapi(realm, client_key):
    client = make_client(realm, "fapi", redirect_uris=[REDIRECT], client_authenticator_type="client-jwt",
                         attributes={"jwks.string": '{"keys": [%s]}' % client_key.export_public(),
                                     "access.token.signed.response.alg": "PS256",
                                     "id.token.signed.response.alg": "PS256"})
    client.roles.create(realm=realm, name=FAPI_ROLE)
    return client


def assertion(key, client_id="fapi", alg="ES256", aud=ISSUER):
    now = int(time.time())
    return jose.sign({"iss": client_id, "sub": client_id, "aud": aud, "iat": now, "exp": now + 60,
                      "jti": uuid.uuid4().hex}, alg=alg, key=key, kid=key.get("kid"))


def credentials(key, **kw):
    return {"client_id": "fapi", "client_assertion_type": client_auth.ASSERTION_TYPE,
            "client_assertion": assertion(key, **kw)}


@pytest.fixture
def prover():
    return Prover()
