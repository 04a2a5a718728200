"""The one password check of every sign-in: the login form's step, the password grant's
direct-grant steps and the admin console's backend all call ``check_password``.

It finds the user through the storage providers (``realms.users.storage``), checks the password with
the user's provider, applies brute-force detection (``realms.signin.bruteforce``) and the enabled check,
and names the outcome with Keycloak's event error. Every outcome costs one password check: an
unknown user, a federated user whose provider is unavailable, a disabled and a locked user are
answered as slowly as a wrong password (``hashers.spend_check_time`` or the real check), so the
answer time tells an attacker nothing about which names exist.

``login_error`` writes the LOGIN_ERROR event of a failed attempt (the form and the console call
it; the token endpoint writes its own, as for every grant).
"""
import logging
from dataclasses import dataclass

from ..audit import events
from ..credentials import get_credential_type
from ..credentials.hashers import spend_check_time
from ..models import Credential
from ..users import storage
from . import bruteforce

logger = logging.getLogger("idp.signin")

# Keycloak's event errors (org.keycloak.events.Errors).
USER_NOT_FOUND = "user_not_found"
USER_DISABLED = "user_disabled"
USER_TEMPORARILY_DISABLED = "user_temporarily_disabled"
INVALID_USER_CREDENTIALS = "invalid_user_credentials"
# Ours: the user's storage provider is not available on this server.
USER_STORAGE_UNAVAILABLE = "user_storage_unavailable"


@dataclass
class Result:
    user: object = None
    error: str = ""  # empty when the password proved the user
    password_valid: bool = False  # told to nobody but the caller (the grant's "Account disabled")
    unreachable: bool = False  # the user's store is configured but cannot be reached (a directory down)

    @property
    def ok(self):
        return not self.error


def find_user(realm, username):
    return storage.find_user(realm, username) if username else None


def not_found(password) -> Result:
    """The answer for an unknown name, after as much work as a wrong password costs."""
    spend_check_time(password)
    return Result(error=USER_NOT_FOUND)


def check_password(realm, username, password, *, ip_address="") -> Result:
    user = find_user(realm, username)
    if user is None:
        return not_found(password)
    return check_user_password(realm, user, password, ip_address=ip_address)


def check_user_password(realm, user, password, *, ip_address="") -> Result:
    """The password check of a user already identified (the direct grant's second step)."""
    try:
        provider = storage.provider_of(user)
    except storage.Unavailable:
        # Never fall back to a password stored here: the external store is the user's authority.
        logger.warning("user %s of realm %s: user storage provider %s is not available", user.pk, realm.name,
                       user.federation_link_id)
        spend_check_time(password)
        return Result(user, USER_STORAGE_UNAVAILABLE)
    locked = bruteforce.is_locked(realm, user)
    # Checked before the enabled and lockout answers, so that those cost the same time.
    try:
        valid = provider.validate(realm, user, Credential.PASSWORD, password or "")
    except storage.Unavailable:  # the store is there but cannot be reached (a directory down)
        logger.warning("user %s of realm %s: user storage %s cannot be reached", user.pk, realm.name,
                       user.federation_link_id)
        return Result(user, USER_STORAGE_UNAVAILABLE, unreachable=True)
    if not user.enabled:
        return Result(user, USER_DISABLED, valid)
    if locked:
        return Result(user, USER_TEMPORARILY_DISABLED, valid)
    if not valid:
        bruteforce.record_failure(realm, user, ip_address)
        return Result(user, INVALID_USER_CREDENTIALS)
    # Earlier failures are forgotten when the whole sign-in succeeds (signed_in), not here: a
    # right password must not reset the count of wrong one-time codes that follow it.
    return Result(user, "", True)


def check_credential(realm, user, credential_type, secret, *, ip_address="") -> Result:
    """A second factor of a user the flow already knows (one-time code, recovery code): refused
    while the user is locked out, and each wrong one counts towards brute-force lockout."""
    if not user.enabled:
        return Result(user, USER_DISABLED)
    if bruteforce.is_locked(realm, user):
        return Result(user, USER_TEMPORARILY_DISABLED)
    if not get_credential_type(credential_type).verify(user, secret):
        bruteforce.record_failure(realm, user, ip_address)
        return Result(user, INVALID_USER_CREDENTIALS)
    return Result(user, "", True)


def signed_in(realm, user):
    """The user passed every step of the sign-in: earlier failures are forgotten (Keycloak
    clears the login-failure record when the authentication completes)."""
    bruteforce.record_success(realm, user)


def login_error(realm, error, *, user=None, client_id, ip_address, username="", details=None):
    """The LOGIN_ERROR event of a failed attempt."""
    details = dict(details or {})
    if username:
        details["username"] = username[:255]
    events.emit(realm, "LOGIN_ERROR", client_id=client_id, user_id=user.pk if user is not None else "",
                ip_address=ip_address, error=error, details=details)
