"""Admin console sign-in: users of the master realm, or of the realm named by ``?realm=`` on the
login page (a realm's own admins; what they may do there is ``realms.administration.admin_permissions``),
checked by the one sign-in service
(``realms.signin.passwords``: brute-force detection, the enabled check, LOGIN_ERROR events), plus a limit
on attempts per client address (``IDP_CONSOLE_LOGIN_ATTEMPTS_PER_MINUTE``), counted in the shared
cache so that every worker sees the same count.

The console's form asks for a password only. An admin who has a second factor (a one-time code,
a security key, recovery codes) or a required action pending is refused there, with a message
that says why, rather than let in on the password alone."""
import time

from django.conf import settings
from django.contrib.auth.backends import BaseBackend
from django.core.cache import cache

from ..audit import events
from ..http.web import client_address
from ..models import Realm, User
from ..signin import passwords

# The admin console's client in Keycloak: console sign-ins are recorded under it.
CONSOLE_CLIENT_ID = "security-admin-console"
RATE_LIMITED = "too_many_login_attempts"
NEEDS_FULL_SIGN_IN = "second_factor_required"
# Credential types that are the password itself; any other stored credential is a further factor.
PASSWORD_TYPES = {"password", "password-history"}
FULL_SIGN_IN_MESSAGE = ("This account signs in with a second factor or has a required action pending, "
                        "which the console's password form cannot ask for.")


def needs_full_sign_in(user):
    return bool(user.required_actions) or any(c.type not in PASSWORD_TYPES for c in user.stored_credentials())


def _over_rate_limit(address):
    """Count one attempt from ``address`` in the current minute; True past the limit."""
    limit = settings.IDP_CONSOLE_LOGIN_ATTEMPTS_PER_MINUTE
    if not limit:
        return False
    key = f"idp:console-signin:{address}:{int(time.time() // 60)}"
    cache.add(key, 0, 120)
    try:
        attempts = cache.incr(key)
    except ValueError:  # evicted between add and incr
        cache.set(key, 1, 120)
        attempts = 1
    return attempts > limit


class ConsoleBackend(BaseBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if not username or password is None:
            return None
        realm_name = (request.GET.get("realm") if request is not None else None) or "master"
        realm = Realm.objects.filter(name=realm_name).first()
        if realm is None:
            return None
        address = client_address(request) if request is not None else ""
        details = {"auth_method": "openid-connect", "username": username[:255]}
        if _over_rate_limit(address):
            # Refused before any lookup or password check: the limit also bounds the CPU an
            # address can make the console spend.
            passwords.login_error(realm, RATE_LIMITED, client_id=CONSOLE_CLIENT_ID, ip_address=address,
                               details=details)
            return None
        result = passwords.check_password(realm, username, password, ip_address=address)
        if not result.ok:
            passwords.login_error(realm, result.error, user=result.user, client_id=CONSOLE_CLIENT_ID,
                               ip_address=address, details=details)
            return None
        if needs_full_sign_in(result.user):
            passwords.login_error(realm, NEEDS_FULL_SIGN_IN, user=result.user, client_id=CONSOLE_CLIENT_ID,
                               ip_address=address, details=details)
            if request is not None:
                request.console_refusal = FULL_SIGN_IN_MESSAGE
            return None
        passwords.signed_in(realm, result.user)
        events.emit(realm, "LOGIN", client_id=CONSOLE_CLIENT_ID, user_id=result.user.pk, ip_address=address,
                    details=details)
        return result.user

    def get_user(self, user_id):
        return User.objects.select_related("realm").filter(pk=user_id).first()

    def has_perm(self, user_obj, perm, obj=None):
        return user_obj.is_superuser

    def has_module_perms(self, user_obj, app_label):
        return user_obj.is_staff
