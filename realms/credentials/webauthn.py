"""The ``webauthn`` (security key, second factor) and ``webauthn-passwordless`` (passkey, first
factor) credentials, the realm's two WebAuthn policies, and the two ceremonies, checked with the
``fido2`` library's relying-party server.

Rows keep Keycloak's WebAuthnCredentialData as ``credential_data`` so that credentials imported
from Keycloak sign in unchanged: ``credentialId`` (standard Base64), ``credentialPublicKey``
(the COSE key's CBOR, Base64url), ``counter``, ``aaguid``, ``attestationStatementFormat`` and
``transports``; ``secret_data`` is Keycloak's empty ``{}``: nothing secret is stored.

The origin and the RP ID come from configuration (``realms.http.web.base_url``, the policy's RP ID,
its extra origins), never from what the browser claims: a page served under another name cannot
produce an assertion this realm accepts (docs/decisions/0026-webauthn-and-passkeys.md).
"""
import base64
import binascii
import hashlib
import hmac
import logging
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

from cryptography.exceptions import InvalidSignature
from fido2 import cbor
from fido2.attestation import Attestation
from fido2.attestation.base import InvalidAttestation
from fido2.cose import CoseKey, UnsupportedKey
from fido2.server import Fido2Server
from fido2.utils import websafe_decode, websafe_encode
from fido2.webauthn import (
    AttestationConveyancePreference,
    AuthenticatorData,
    CollectedClientData,
    PublicKeyCredentialRpEntity,
)

from ..errors import RealmsError
from ..http.web import base_url
from ..models import Credential
from . import CredentialType

logger = logging.getLogger("idp.webauthn")

NOT_SPECIFIED = "not specified"
# Keycloak's names for the policy's signature algorithms -> COSE algorithm identifiers.
# RS384, RS512 and RS1, which Keycloak also offers, are left out: fido2 verifies none of them, so
# a policy naming them is reported at import and the console does not offer them.
ALGORITHMS = {"ES256": -7, "ES384": -35, "ES512": -36, "RS256": -257, "Ed25519": -8}
UNSUPPORTED_ALGORITHMS = ("RS384", "RS512", "RS1")
# Keycloak's defaults (WebAuthnPolicy): ES256 and RS256, everything else left to the browser.
DEFAULT_ALGORITHMS = ("ES256", "RS256")
# Keycloak's policy values of "require resident key" -> WebAuthn's residentKey.
RESIDENT_KEY = {"Yes": "required", "No": "discouraged"}


class CeremonyError(RealmsError, ValueError):
    """A WebAuthn response this realm refuses; the reason is for the log and the event."""


def _as_list(value):
    if isinstance(value, str):
        return [v.strip() for v in value.replace("##", ",").split(",") if v.strip()]
    return [str(v) for v in value or ()]


def _as_bool(value):
    return value is True or str(value).lower() == "true"


def _specified(value):
    return value if value and value != NOT_SPECIFIED else None


@dataclass(frozen=True)
class WebAuthnPolicy:
    """A realm's WebAuthn policy (``webAuthnPolicy*``) or passwordless policy
    (``webAuthnPolicyPasswordless*``), with Keycloak's defaults."""

    credential_type: str = Credential.WEBAUTHN
    rp_name: str = "keycloak"
    rp_id: str = ""
    algorithms: tuple = DEFAULT_ALGORITHMS
    attestation: str = NOT_SPECIFIED
    attachment: str = NOT_SPECIFIED
    resident_key: str = NOT_SPECIFIED
    user_verification: str = NOT_SPECIFIED
    timeout: int = 0
    avoid_same_authenticator: bool = False
    acceptable_aaguids: tuple = ()
    extra_origins: tuple = ()

    @classmethod
    def of(cls, realm, *, passwordless=False):
        prefix = "webAuthnPolicyPasswordless" if passwordless else "webAuthnPolicy"
        stored = realm.webauthn_policy or {}
        default = cls()

        def get(key, fallback):
            value = stored.get(prefix + key)
            return fallback if value is None or value == "" else value

        try:
            timeout = max(int(get("CreateTimeout", 0)), 0)
        except (TypeError, ValueError):
            timeout = 0
        return cls(
            credential_type=Credential.WEBAUTHN_PASSWORDLESS if passwordless else Credential.WEBAUTHN,
            rp_name=str(get("RpEntityName", default.rp_name)),
            rp_id=str(get("RpId", "")).strip(),
            algorithms=tuple(a for a in _as_list(get("SignatureAlgorithms", DEFAULT_ALGORITHMS)) if a in ALGORITHMS)
            or DEFAULT_ALGORITHMS,
            attestation=str(get("AttestationConveyancePreference", NOT_SPECIFIED)),
            attachment=str(get("AuthenticatorAttachment", NOT_SPECIFIED)),
            resident_key=str(get("RequireResidentKey", NOT_SPECIFIED)),
            user_verification=str(get("UserVerificationRequirement", NOT_SPECIFIED)),
            timeout=timeout,
            avoid_same_authenticator=_as_bool(get("AvoidSameAuthenticatorRegister", False)),
            acceptable_aaguids=tuple(a.lower() for a in _as_list(get("AcceptableAaguids", ()))),
            extra_origins=tuple(o.rstrip("/") for o in _as_list(get("ExtraOrigins", ()))),
        )

    @property
    def uv_required(self):
        return self.user_verification == "required"

    def relying_party(self, request):
        """(RP ID, accepted origins): the policy's RP ID, else the configured base URL's host (as
        Keycloak takes its base URI's); the base URL's origin plus the policy's extra origins."""
        parts = urlsplit(base_url(request))
        origin = f"{parts.scheme}://{parts.netloc}"
        return self.rp_id or parts.hostname or "", (origin, *self.extra_origins)

    def server(self, request):
        rp_id, origins = self.relying_party(request)
        attestation = _specified(self.attestation)
        return Fido2Server(PublicKeyCredentialRpEntity(name=self.rp_name, id=rp_id),
                           attestation=AttestationConveyancePreference(attestation) if attestation else None,
                           verify_origin=lambda origin: origin in origins, verify_attestation=_verify_attestation)

    def creation_options(self, request, user, challenge, exclude=()):
        """PublicKeyCredentialCreationOptions as JSON for ``navigator.credentials.create``."""
        rp_id, _ = self.relying_party(request)
        selection = {k: v for k, v in (
            ("authenticatorAttachment", _specified(self.attachment)),
            ("residentKey", RESIDENT_KEY.get(self.resident_key)),
            ("requireResidentKey", self.resident_key == "Yes" or None),
            ("userVerification", _specified(self.user_verification))) if v is not None}
        options = {
            "rp": {"id": rp_id, "name": self.rp_name},
            "user": {"id": user_handle(user), "name": user.username,
                     "displayName": " ".join(n for n in (user.first_name, user.last_name) if n) or user.username},
            "challenge": challenge,
            "pubKeyCredParams": [{"type": "public-key", "alg": ALGORITHMS[a]} for a in self.algorithms],
            "excludeCredentials": [descriptor(c) for c in exclude],
            "authenticatorSelection": selection,
            "attestation": _specified(self.attestation) or "none",
        }
        if self.timeout:
            options["timeout"] = self.timeout * 1000
        return options

    def request_options(self, request, challenge, allow=()):
        """PublicKeyCredentialRequestOptions as JSON for ``navigator.credentials.get``."""
        rp_id, _ = self.relying_party(request)
        options = {"rpId": rp_id, "challenge": challenge, "allowCredentials": [descriptor(c) for c in allow]}
        if _specified(self.user_verification):
            options["userVerification"] = self.user_verification
        if self.timeout:
            options["timeout"] = self.timeout * 1000
        return options


def _verify_attestation(attestation_object, client_data_hash):
    """The statement's own signature (packed, fido-u2f, tpm ...) when the policy asks for
    attestation. No trust anchors are configured, so the certificate chain is not judged (as
    Keycloak without a trust store); an unknown format is refused."""
    try:
        Attestation.for_type(attestation_object.fmt)().verify(
            attestation_object.att_stmt, attestation_object.auth_data, client_data_hash)
    except InvalidAttestation as exc:
        raise CeremonyError(f"attestation {attestation_object.fmt!r} refused: {type(exc).__name__}") from None


def new_challenge():
    return websafe_encode(secrets.token_bytes(32))


def user_handle(user):
    """WebAuthn's user.id: the user's id, UTF-8, Base64url (as Keycloak's registration sets it)."""
    return websafe_encode(str(user.pk).encode())


def user_id_from_handle(handle):
    try:
        return websafe_decode(handle).decode()
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None


def _b64decode(value):
    """Keycloak writes credential ids in standard Base64, public keys in Base64url; accept both."""
    value = value.strip().replace("-", "+").replace("_", "/")
    return base64.b64decode(value + "=" * (-len(value) % 4), validate=True)


def credential_id(credential):
    try:
        return _b64decode(credential.credential_data.get("credentialId", ""))
    except (ValueError, binascii.Error):
        return b""


def descriptor(credential):
    transports = credential.credential_data.get("transports") or []
    entry = {"type": "public-key", "id": websafe_encode(credential_id(credential))}
    if transports:
        entry["transports"] = sorted(transports)
    return entry


def _public_key(credential):
    return CoseKey.parse(cbor.decode(_b64decode(credential.credential_data.get("credentialPublicKey", ""))))


def _form_bytes(params, name):
    value = params.get(name, "")
    if not value:
        raise CeremonyError(f"missing {name}")
    try:
        return websafe_decode(value)
    except (ValueError, binascii.Error):
        raise CeremonyError(f"{name} is not Base64url") from None


@dataclass(frozen=True)
class Assertion:
    """A ``navigator.credentials.get`` answer as Keycloak's login page posts it, with what this
    realm expects of it (the challenge it issued and its policy)."""

    credential_id: bytes
    client_data: bytes
    authenticator_data: bytes
    signature: bytes
    user_handle: str
    challenge: str
    policy: WebAuthnPolicy
    request: object

    @classmethod
    def from_form(cls, params, *, challenge, policy, request):
        if not challenge:
            raise CeremonyError("no challenge was issued")
        return cls(credential_id=_form_bytes(params, "credentialId"),
                   client_data=_form_bytes(params, "clientDataJSON"),
                   authenticator_data=_form_bytes(params, "authenticatorData"),
                   signature=_form_bytes(params, "signature"),
                   user_handle=params.get("userHandle", ""), challenge=challenge, policy=policy, request=request)


@dataclass(frozen=True)
class Registration:
    """A ``navigator.credentials.create`` answer as Keycloak's registration page posts it."""

    client_data: bytes
    attestation_object: bytes
    transports: tuple
    challenge: str
    policy: WebAuthnPolicy
    request: object

    @classmethod
    def from_form(cls, params, *, challenge, policy, request):
        if not challenge:
            raise CeremonyError("no challenge was issued")
        transports = tuple(sorted({t.strip() for t in params.get("transports", "").split(",") if t.strip()}))
        return cls(client_data=_form_bytes(params, "clientDataJSON"),
                   attestation_object=_form_bytes(params, "attestationObject"),
                   transports=transports, challenge=challenge, policy=policy, request=request)


class WebAuthn(CredentialType):
    """Security keys as a second factor (``webauthn``); ``WebAuthnPasswordless`` is the same with
    the passwordless policy."""

    type = Credential.WEBAUTHN
    category = "two-factor"
    display_name = "webauthn-display-name"
    help_text = "webauthn-help-text"
    icon_css_class = "kcAuthenticatorWebAuthnClass"
    create_action = "webauthn-register"

    def policy(self, realm):
        return WebAuthnPolicy.of(realm, passwordless=self.type == Credential.WEBAUTHN_PASSWORDLESS)

    def credentials(self, user):
        return [c for c in user.stored_credentials() if c.type == self.type]

    def verify(self, user, secret):
        """Whether ``secret`` (an ``Assertion``) passes ``check``; the reason it does not is logged."""
        try:
            return self.check(user, secret)
        except CeremonyError as exc:
            logger.info("WebAuthn assertion for user %s refused: %s", user.pk, exc)
            return False

    def check(self, user, assertion):
        """True when ``assertion`` is a valid signature by one of the user's credentials of this
        type, for this realm's RP ID and origin, over the challenge issued, with a sign counter
        that moved forward; else CeremonyError with the reason."""
        policy = assertion.policy
        for cred in self.credentials(user):  # the rows the sign-in's other questions read too
            if secrets.compare_digest(credential_id(cred), assertion.credential_id):
                return self._check(cred, assertion, policy)
        raise CeremonyError("unknown credential")

    def _check(self, cred, assertion, policy):
        # The checks of WebAuthn §7.2 that Fido2Server.authenticate_complete makes, on fido2's
        # parsers: its dataclass parsing of the response costs more than a sign-in's signature
        # (docs/decisions/0026-webauthn-and-passkeys.md).
        rp_id, origins = policy.relying_party(assertion.request)
        try:
            public_key = _public_key(cred)
            client_data = CollectedClientData(assertion.client_data)
            auth_data = AuthenticatorData(assertion.authenticator_data)
            expected = websafe_decode(assertion.challenge)
        except (ValueError, TypeError, KeyError, binascii.Error) as exc:
            raise CeremonyError(f"malformed assertion: {exc}") from None
        if isinstance(public_key, UnsupportedKey):
            raise CeremonyError(f"unsupported key algorithm {public_key.get(3)}")
        if client_data.type != CollectedClientData.TYPE.GET:
            raise CeremonyError("wrong type in the client data")
        if client_data.origin not in origins:
            raise CeremonyError(f"origin {client_data.origin!r} is not this realm's")
        if not hmac.compare_digest(expected, client_data.challenge):
            raise CeremonyError("wrong challenge")
        if not hmac.compare_digest(hashlib.sha256(rp_id.encode()).digest(), auth_data.rp_id_hash):
            raise CeremonyError("wrong RP ID hash")
        if not auth_data.is_user_present():
            raise CeremonyError("user presence flag not set")
        if policy.uv_required and not auth_data.is_user_verified():
            raise CeremonyError("user verification required, but the user verified flag is not set")
        try:
            public_key.verify(assertion.authenticator_data + client_data.hash, assertion.signature)
        except (InvalidSignature, ValueError):
            raise CeremonyError("invalid signature") from None
        presented = auth_data.counter
        stored = int(cred.credential_data.get("counter", 0) or 0)
        # WebAuthn §7.2 step 21: a counter that did not move forward may be a cloned authenticator.
        # Authenticators without a counter always send 0 (and 0 was stored): nothing to compare.
        if (presented or stored) and presented <= stored:
            raise CeremonyError(f"sign counter {presented} did not increase past {stored}")
        if presented > stored:
            # Compare and set in one statement: of two answers racing with one count, one wins.
            data = {**cred.credential_data, "counter": presented}
            if not Credential.objects.filter(pk=cred.pk, credential_data__counter__lt=presented).update(
                    credential_data=data):
                raise CeremonyError(f"sign counter {presented} was used concurrently")
            cred.credential_data = data
        return True

    def create(self, user, secret, *, label=""):
        """Check ``secret`` (a ``Registration``) against the policy and store the new credential;
        CeremonyError with the reason when it does not pass."""
        registration = secret
        policy = registration.policy
        try:
            server = policy.server(registration.request)
            state = {"challenge": registration.challenge, "user_verification": "required" if policy.uv_required else None}
            auth_data = server.register_complete(state, {
                "rawId": "", "type": "public-key",
                "response": {"clientDataJSON": websafe_encode(registration.client_data),
                             "attestationObject": websafe_encode(registration.attestation_object)}})
        except CeremonyError:
            raise
        except (ValueError, TypeError, KeyError, binascii.Error) as exc:
            raise CeremonyError(str(exc) or type(exc).__name__) from None
        data = auth_data.credential_data
        if data is None:
            raise CeremonyError("no credential in the attestation")
        algorithm = data.public_key.get(3)
        if algorithm not in {ALGORITHMS[a] for a in policy.algorithms} or isinstance(data.public_key, UnsupportedKey):
            raise CeremonyError(f"signature algorithm {algorithm} is not allowed by the policy")
        aaguid = str(data.aaguid)
        if policy.acceptable_aaguids and aaguid not in policy.acceptable_aaguids:
            raise CeremonyError(f"authenticator {aaguid} is not acceptable")
        attestation = cbor.decode(registration.attestation_object)
        raw_id = data.credential_id
        if any(credential_id(c) == raw_id for c in Credential.objects.filter(
                user__realm=user.realm, type__in=(Credential.WEBAUTHN, Credential.WEBAUTHN_PASSWORDLESS),
                credential_data__credentialId=base64.b64encode(raw_id).decode())):
            raise CeremonyError("credential already registered")
        user.forget_credentials()
        return Credential.objects.create(user=user, type=self.type, user_label=label[:255], secret_data="{}",
                                         credential_data={
                                             "aaguid": aaguid,
                                             "credentialId": base64.b64encode(raw_id).decode(),
                                             "credentialPublicKey": websafe_encode(cbor.encode(dict(data.public_key))),
                                             "counter": auth_data.counter,
                                             "attestationStatementFormat": attestation.get("fmt", "none"),
                                             "transports": list(registration.transports),
                                         })


class WebAuthnPasswordless(WebAuthn):
    type = Credential.WEBAUTHN_PASSWORDLESS
    category = "passwordless"
    display_name = "webauthn-passwordless-display-name"
    help_text = "webauthn-passwordless-help-text"
    icon_css_class = "kcAuthenticatorWebAuthnPasswordlessClass"
    create_action = "webauthn-register-passwordless"


