"""The ``recovery-authn-codes`` credential (Keycloak's RecoveryAuthnCodesCredentialModel):
12 single-use codes, stored as Keycloak stores them (secretData ``{"codes": [{"number": n,
"encodedHashedValue": base64(SHA-512(code))}]}``, credentialData ``{"hashIterations": 1,
"algorithm": "RS512", "totalCodes": 12, "remainingCodes": n}``), so they import and export
unchanged. The codes are asked for in order, each accepted once; the used one is removed."""
import base64
import hashlib
import json
import secrets
import string

from django.db import transaction

from ..data import crypto
from ..models import Credential
from . import CredentialType

TYPE = "recovery-authn-codes"
CODE_COUNT = 12
CODE_LENGTH = 12
_ALPHABET = string.ascii_uppercase + string.digits
# Fewer unused codes than this and the user is told to make new ones.
LOW_CODES_THRESHOLD = 4


def generate_codes():
    return ["".join(secrets.choice(_ALPHABET) for _ in range(CODE_LENGTH)) for _ in range(CODE_COUNT)]


def formatted(code):
    """``ABCD-EFGH-IJKL``, as the codes are shown (the dashes are optional when typed)."""
    return "-".join(code[i:i + 4] for i in range(0, len(code), 4))


def _hashed(code):
    return base64.b64encode(hashlib.sha512(code.encode()).digest()).decode()


def _codes(cred):
    return json.loads(cred.secret_data).get("codes", []) if cred is not None else []


class RecoveryCodes(CredentialType):
    type = TYPE
    category = "two-factor"
    display_name = "recovery-authn-codes-display-name"
    help_text = "recovery-authn-codes-help-text"
    icon_css_class = "kcAuthenticatorRecoveryAuthnCodesClass"
    create_action = "CONFIGURE_RECOVERY_AUTHN_CODES"

    def verify(self, user, secret):
        """Whether ``secret`` is the user's next unused code; it is then used up."""
        typed = (secret or "").replace("-", "").replace(" ", "").strip().upper()
        user.forget_credentials()
        with transaction.atomic():
            cred = user.credentials.select_for_update().filter(type=self.type).first()
            codes = _codes(cred)
            if not typed or not codes or not crypto.constant_time_equals(_hashed(typed), codes[0]["encodedHashedValue"]):
                return False
            rest = codes[1:]
            cred.secret_data = json.dumps({"codes": rest})
            cred.credential_data = {**cred.credential_data, "remainingCodes": len(rest)}
            cred.save(update_fields=["secret_data", "credential_data"])
        return True

    def create(self, user, secret, *, label=""):
        """Replace the user's codes with ``secret`` (the list of new codes)."""
        user.forget_credentials()
        with transaction.atomic():
            user.credentials.filter(type=self.type).delete()
            return Credential.objects.create(
                user=user, type=self.type, user_label=label,
                secret_data=json.dumps({"codes": [{"number": i, "encodedHashedValue": _hashed(code)}
                                                  for i, code in enumerate(secret, start=1)]}),
                credential_data={"hashIterations": 1, "algorithm": "RS512", "totalCodes": len(secret),
                                 "remainingCodes": len(secret)})

    def _credential(self, user):
        return next((c for c in user.stored_credentials() if c.type == self.type), None)

    def configured_for(self, user):
        return bool(_codes(self._credential(user)))

    def next_code_number(self, user):
        codes = _codes(self._credential(user))
        return codes[0]["number"] if codes else None

    def remaining(self, user):
        return len(_codes(self._credential(user)))

    def secret_from_representation(self, secret_data):
        value = json.loads(secret_data)
        codes = value.get("codes") if isinstance(value, dict) else None
        if not isinstance(codes, list) or not all(
                isinstance(c, dict) and isinstance(c.get("encodedHashedValue"), str) for c in codes):
            raise ValueError('recovery codes\' secretData must be {"codes": [{"number": .., "encodedHashedValue": ..}]}')
        return secret_data
