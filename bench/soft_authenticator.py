"""A WebAuthn authenticator in software: one ES256 key pair (``cryptography``), a sign counter,
and the browser's part of both ceremonies, answering with the form fields the v2 login theme
posts (Keycloak's names). The passkey benchmark's load generator signs with it, and the tests
craft assertions with it (a wrong RP ID, a replayed counter) that no real browser would send.
"""
import base64
import hashlib
import json
import os
import struct
import uuid

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from fido2 import cbor
from fido2.utils import websafe_encode

UP, UV, AT = 0x01, 0x04, 0x40  # authenticator data flags: user present, user verified, attested data
_P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551


class SoftAuthenticator:
    def __init__(self, rp_id, *, user_handle=b"", counter=0, aaguid=bytes(16), key=None, credential_id=None):
        self.rp_id, self.user_handle, self.counter, self.aaguid = rp_id, user_handle, counter, aaguid
        self.key = key or ec.generate_private_key(ec.SECP256R1())
        self.credential_id = credential_id or os.urandom(32)

    @classmethod
    def from_seed(cls, seed, rp_id, **kwargs):
        """The same key and credential id for the same seed (a benchmark's set-up stores the
        credential, its load generator signs with it in another process)."""
        digest = hashlib.sha256(f"soft-authenticator:{seed}".encode()).digest()
        key = ec.derive_private_key(int.from_bytes(digest, "big") % (_P256_ORDER - 1) + 1, ec.SECP256R1())
        return cls(rp_id, key=key, credential_id=hashlib.sha256(digest).digest(), **kwargs)

    def cose_public_key(self):
        numbers = self.key.public_key().public_numbers()
        return cbor.encode({1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")})

    def keycloak_credential_data(self):
        """The credential as Keycloak exports it (WebAuthnCredentialData)."""
        return {"aaguid": str(uuid.UUID(bytes=self.aaguid)), "credentialId": base64.b64encode(self.credential_id).decode(),
                "credentialPublicKey": websafe_encode(self.cose_public_key()), "counter": self.counter,
                "attestationStatementFormat": "none", "transports": ["internal"]}

    @staticmethod
    def _client_data(kind, challenge, origin):
        return json.dumps({"type": kind, "challenge": challenge, "origin": origin, "crossOrigin": False}).encode()

    def _auth_data(self, rp_id, flags, counter, attested=b""):
        return hashlib.sha256((rp_id or self.rp_id).encode()).digest() + bytes([flags]) + struct.pack(">I", counter) + attested

    def register(self, challenge, origin, *, rp_id=None, flags=UP | UV | AT):
        """The fields of ``#register`` after ``navigator.credentials.create`` (attestation "none")."""
        attested = self.aaguid + struct.pack(">H", len(self.credential_id)) + self.credential_id + self.cose_public_key()
        auth_data = self._auth_data(rp_id, flags, self.counter, attested)
        attestation = cbor.encode({"fmt": "none", "attStmt": {}, "authData": auth_data})
        return {"clientDataJSON": websafe_encode(self._client_data("webauthn.create", challenge, origin)),
                "attestationObject": websafe_encode(attestation), "publicKeyCredentialId": websafe_encode(self.credential_id),
                "transports": "internal"}

    def assertion(self, challenge, origin, *, rp_id=None, counter=None, flags=UP | UV, with_user_handle=True):
        """The fields of ``#webauth`` after ``navigator.credentials.get``; the counter moves
        forward by one unless ``counter`` is given."""
        if counter is None:
            self.counter += 1
            counter = self.counter
        client_data = self._client_data("webauthn.get", challenge, origin)
        auth_data = self._auth_data(rp_id, flags, counter)
        signature = self.key.sign(auth_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256()))
        return {"clientDataJSON": websafe_encode(client_data), "authenticatorData": websafe_encode(auth_data),
                "signature": websafe_encode(signature), "credentialId": websafe_encode(self.credential_id),
                "userHandle": websafe_encode(self.user_handle) if with_user_handle else ""}
