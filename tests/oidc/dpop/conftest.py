"""Fixtures of the DPoP tests (RFC 9449): the token-side realm of tests/oidc/endpoints, clients
requiring DPoP, and a client-side prover that signs proofs with jwcrypto, apart from the
server's own JOSE code, so a test compares the server against an independent implementation."""
import hashlib
import json
import time
import uuid

import pytest
from jwcrypto import jwk, jws

from oidc.jose import b64e
from realms.data import realm_cache
from tests.oidc.endpoints.conftest import alice, client_of, http, realm  # noqa: F401  (fixtures)

BASE = "http://testserver"


class Prover:
    """A DPoP client's key and the proofs it makes."""

    def __init__(self, kty="EC", alg="ES256", **params):
        self.alg = alg
        self.key = jwk.JWK.generate(kty=kty, **(params or {"crv": "P-256"}))

    @property
    def jkt(self):
        return self.key.thumbprint()  # jwcrypto's RFC 7638 SHA-256 thumbprint

    def proof(self, method, url, *, access_token=None, nonce=None, iat=None, jti=None, header=None, claims=None,
              key=None, alg=None):
        payload = {"jti": jti or str(uuid.uuid4()), "htm": method, "htu": url,
                   "iat": int(time.time()) if iat is None else iat}
        if access_token is not None:
            payload["ath"] = b64e(hashlib.sha256(access_token.encode()).digest())
        if nonce is not None:
            payload["nonce"] = nonce
        payload.update(claims or {})
        protected = {"typ": "dpop+jwt", "alg": alg or self.alg, "jwk": json.loads(self.key.export_public())}
        protected.update(header or {})
        token = jws.JWS(json.dumps(payload))
        token.add_signature(key or self.key, alg=alg or self.alg, protected=json.dumps(protected))
        return token.serialize(compact=True)


@pytest.fixture
def prover():
    return Prover()


def set_attributes(realm, client_id, **attributes):
    client = client_of(realm, client_id)
    client.attributes = {**client.attributes, **attributes}
    client.save()
    realm_cache.clear()
    return client


def endpoint(realm, suffix):
    return f"{BASE}/realms/{realm.name}/protocol/openid-connect/{suffix}"
