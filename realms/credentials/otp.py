"""The ``otp`` credential (Keycloak's OTPCredentialModel) and the realm's OTP policy.

Rows keep Keycloak's split: ``credential_data`` is its credentialData (``subType`` totp/hotp,
``digits``, ``period``, ``counter``, ``algorithm``, optional ``secretEncoding``) and
``secret_data`` its secretData JSON (``{"value": secret}``), encrypted at rest like client
secrets (``realms.data.crypto``) and given back unchanged on export. As in Keycloak the HMAC key is
the UTF-8 bytes of ``value`` unless ``secretEncoding`` is ``BASE32``; authenticator apps get it
Base32-encoded.

Codes are RFC 4226 (HOTP; TOTP is HOTP of the number of periods since the epoch, RFC 6238)
computed here with the standard library:
django-otp's ``oath.hotp`` only knows HMAC-SHA1, and Keycloak's policy offers SHA-256 and
SHA-512 too (docs/decisions/0022-one-time-codes.md).
"""
import base64
import hashlib
import hmac
import json
import logging
import secrets
import string
import struct
import time
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from cryptography.fernet import InvalidToken
from django.core.cache import cache
from django.db import transaction

from ..data import crypto
from ..models import Credential
from . import CredentialType

logger = logging.getLogger("idp.otp")

TOTP, HOTP = "totp", "hotp"
ALGORITHMS = {"HmacSHA1": hashlib.sha1, "HmacSHA256": hashlib.sha256, "HmacSHA512": hashlib.sha512}
# Keycloak's secret: 20 random letters and digits (HmacOTP.generateSecret).
_SECRET_ALPHABET = string.ascii_letters + string.digits
SECRET_LENGTH = 20


@dataclass(frozen=True)
class OtpPolicy:
    """The realm's OTP policy (its ``otpPolicy*`` keys), with Keycloak's defaults."""

    type: str = TOTP
    algorithm: str = "HmacSHA1"
    digits: int = 6
    period: int = 30
    look_ahead: int = 1
    initial_counter: int = 0
    code_reusable: bool = False

    @classmethod
    def of(cls, realm):
        p = realm.otp_policy or {}
        default = cls()
        return cls(
            type=p.get("otpPolicyType", default.type),
            algorithm=p.get("otpPolicyAlgorithm", default.algorithm),
            digits=int(p.get("otpPolicyDigits", default.digits)),
            period=max(int(p.get("otpPolicyPeriod", default.period)), 1),
            look_ahead=max(int(p.get("otpPolicyLookAheadWindow", default.look_ahead)), 0),
            initial_counter=int(p.get("otpPolicyInitialCounter", default.initial_counter)),
            code_reusable=bool(p.get("otpPolicyCodeReusable", default.code_reusable)),
        )

    def credential_data(self):
        return {"subType": self.type, "digits": self.digits, "counter": self.initial_counter,
                "period": self.period, "algorithm": self.algorithm}

    def key_uri(self, realm, user, secret):
        """The ``otpauth://`` URI authenticator apps read (Keycloak's OTPPolicy.getKeyURI)."""
        issuer = realm.display_name or realm.name
        params = {"secret": base32(secret.encode()), "digits": self.digits,
                  "algorithm": self.algorithm.removeprefix("Hmac"), "issuer": issuer}
        params.update({"period": self.period} if self.type == TOTP else {"counter": self.initial_counter})
        label = quote(f"{issuer}:{user.username}", safe=":@")
        return f"otpauth://{self.type}/{label}?{urlencode(params, quote_via=quote)}"


def base32(key: bytes) -> str:
    return base64.b32encode(key).decode().rstrip("=")


def generate_secret() -> str:
    return "".join(secrets.choice(_SECRET_ALPHABET) for _ in range(SECRET_LENGTH))


def hotp(key: bytes, counter: int, digits=6, algorithm="HmacSHA1") -> str:
    """RFC 4226 §5.3: the dynamically truncated HMAC of the counter, as ``digits`` decimals."""
    digest = hmac.new(key, struct.pack(">Q", counter), ALGORITHMS[algorithm]).digest()
    offset = digest[-1] & 0x0F
    value = struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF
    return str(value % 10**digits).zfill(digits)


def _key(cred):
    try:
        value = json.loads(crypto.decrypt(cred.secret_data))["value"]
    except InvalidToken:
        # Not ours to read (stored in plain text, or under a retired SECRET_KEY): no code can
        # match, so the user is refused rather than let in on the password alone.
        logger.error("OTP credential %s cannot be decrypted: every code is refused", cred.pk)
        return None
    if str(cred.credential_data.get("secretEncoding", "")).upper() == "BASE32":
        return base64.b32decode(value.upper() + "=" * (-len(value) % 8))
    return value.encode()


class Otp(CredentialType):
    type = Credential.OTP
    category = "two-factor"
    display_name = "otp-display-name"
    help_text = "otp-help-text"
    icon_css_class = "kcAuthenticatorOTPClass"
    create_action = "CONFIGURE_TOTP"

    def verify(self, user, secret):
        """Whether ``secret`` is a current code of one of the user's OTP credentials. A HOTP
        match moves the counter past it; a TOTP code is refused the second time within its window
        unless the realm's policy allows reuse (Keycloak's otpPolicyCodeReusable)."""
        code = (secret or "").strip()
        if not code.isdigit():
            return False
        policy = OtpPolicy.of(user.realm)
        credentials = [c for c in user.stored_credentials() if c.type == self.type]
        if all(c.credential_data.get("subType", TOTP) != HOTP for c in credentials):
            # A TOTP code is made single-use in the shared cache (``_matches``): no row to lock,
            # and the rows the sign-in already read answer (no transaction, no query).
            return any(self._matches(c, code, policy) for c in credentials)
        with transaction.atomic():  # the row lock serialises HOTP counter updates
            locked = user.credentials.select_for_update().filter(type=self.type).order_by("-priority", "created")
            return any(self._matches(c, code, policy) for c in locked)

    def verify_credential(self, cred, secret):
        """``verify`` against one credential (the one being set up)."""
        code = (secret or "").strip()
        return code.isdigit() and self._matches(cred, code, OtpPolicy.of(cred.user.realm))

    def _matches(self, cred, code, policy):
        data = cred.credential_data
        key = _key(cred)
        if key is None:
            return False
        digits, algorithm = int(data.get("digits", 6)), data.get("algorithm", "HmacSHA1")
        if data.get("subType", TOTP) == HOTP:
            counter = int(data.get("counter", 0))
            for candidate in range(counter, counter + policy.look_ahead + 1):
                if crypto.constant_time_equals(hotp(key, candidate, digits, algorithm), code):
                    cred.credential_data = {**data, "counter": candidate + 1}
                    cred.save(update_fields=["credential_data"])
                    return True
            return False
        period = int(data.get("period", 30))
        now = int(time.time()) // period
        for step in range(now - policy.look_ahead, now + policy.look_ahead + 1):
            if crypto.constant_time_equals(hotp(key, step, digits, algorithm), code):
                if policy.code_reusable:
                    return True
                # One use per code while any window could still accept it (Keycloak's single-use
                # store); cache.add is atomic, so two parallel uses cannot both pass.
                ttl = period * (2 * policy.look_ahead + 2)
                return cache.add(f"idp:otp:used:{cred.pk}:{step}:{code}", 1, ttl)
        return False

    def create(self, user, secret, *, label=""):
        """A new OTP credential under the realm's policy (a user may hold several)."""
        user.forget_credentials()
        return Credential.objects.create(
            user=user, type=self.type, user_label=label, credential_data=OtpPolicy.of(user.realm).credential_data(),
            secret_data=crypto.encrypt(json.dumps({"value": secret})))

    def secret_from_representation(self, secret_data):
        value = json.loads(secret_data)
        if not isinstance(value, dict) or not isinstance(value.get("value"), str) or not value["value"]:
            raise ValueError('an OTP credential\'s secretData must be {"value": "<secret>"}')
        return crypto.encrypt(secret_data)

    def secret_to_representation(self, stored):
        return crypto.decrypt(stored)
