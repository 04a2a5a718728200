"""The realm's password policy (Keycloak's ``PasswordPolicy`` and its ``*PasswordPolicyProvider``s).

The policy string is Keycloak's: ``length(12) and digits(2) and notUsername(undefined)``. Each
policy has Keycloak's name, default value and message; a name this server does not know, or a
value it cannot read, is refused (``PolicyConfigError``) where the string is set (realm import,
the console's realm form), never ignored.

Every writer sets a password through ``storage.set_password`` (the user's store); the realm
database's store checks it here (``validate``) before it hashes it, as does the import of a
plaintext credential. A refused password raises ``PasswordPolicyError`` whose text is Keycloak's
message ("Invalid password: minimum length 12.").

Besides the checks, the policy decides how passwords are stored: ``hashAlgorithm`` and
``hashIterations`` for every new hash (``hash_password``) and for the upgrade of an older hash at
sign-in (``needs_rehash``); ``passwordHistory`` keeps the last hashes as ``password-history``
credentials (``replace_password``); ``forceExpiredPasswordChange`` makes an old password a
required UPDATE_PASSWORD (``expired``).

``maxAuthAge`` limits how old a sign-in may be for an application-initiated UPDATE_PASSWORD
(``kc_action``, ``max_auth_age``; 300 seconds without the policy, as Keycloak).
"""
import functools
import logging
import os
import re
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.hashers import check_password, get_hasher, identify_hasher
from django.utils import timezone

from ..data import rows
from ..errors import RealmsError
from . import hashers

logger = logging.getLogger("idp.password_policy")

# Keycloak's credential types: the password, and earlier ones kept for passwordHistory.
PASSWORD, HISTORY = "password", "password-history"

# Keycloak's own default (its non-FIPS default since 24) and each algorithm's default iterations.
DEFAULT_HASH_ALGORITHM = "argon2"
_DEFAULT_ITERATIONS = {"argon2": hashers.Argon2idHasher.time_cost, "pbkdf2-sha512": 210_000,
                       "pbkdf2-sha256": 600_000, "pbkdf2": 1_300_000}
_HASH_ALGORITHMS = {"argon2": hashers.Argon2idHasher.algorithm, **hashers.PBKDF2}

GENERIC = ("invalidPasswordGenericMessage", "Invalid password: new password does not match password policies.")
DEFAULT_MAX_AUTH_AGE = 300  # seconds, Keycloak's maxAuthAge default


class PolicyConfigError(RealmsError, ValueError):
    """A policy string this server cannot enforce; the text says which policy and why."""


class PasswordPolicyError(RealmsError, ValueError):
    """A password the realm's policy refuses: ``str()`` is Keycloak's English message, ``key``
    its message key (the Admin API answers both: ``error`` and ``error_description``)."""

    def __init__(self, key, message, *args):
        super().__init__(message)
        self.key, self.args_ = key, args

    def message(self):
        """The error as a page shows it (translated there)."""
        from ..http.messages import Message

        return Message(self.key, *self.args_)


# Parsing each policy's value (Keycloak's parseConfig) ------------------------------------------

def _int(value, default):
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise PolicyConfigError("Not a valid number") from None


def _number(default):
    return lambda value: _int(value, default)


def _ignored(value):
    return None  # notUsername(undefined): the console sends a placeholder the policy never reads


def _regex(value):
    if value is None:
        raise PolicyConfigError("Config required")
    if not value.strip():
        raise PolicyConfigError("White space not accepted")
    try:
        return re.compile(value)
    except re.error:
        raise PolicyConfigError("Not a valid regular expression") from None


def _hash_algorithm(value):
    value = value or DEFAULT_HASH_ALGORITHM
    if value not in _HASH_ALGORITHMS:
        raise PolicyConfigError(f"Hash algorithm {value!r} is not supported (one of {', '.join(_HASH_ALGORITHMS)})")
    return value


def _blacklist(value):
    # A file name only, resolved under the operator's directory: the realm never names a path.
    if not value or value in (".", "..") or os.path.basename(value) != value or "\\" in value:
        raise PolicyConfigError("Config required: the name of a file in the password blacklists directory")
    directory = settings.IDP_PASSWORD_BLACKLISTS_DIR
    if not directory:
        raise PolicyConfigError("No password blacklists directory is configured (IDP_PASSWORD_BLACKLISTS_DIR)")
    path = os.path.join(directory, value)
    if not os.path.isfile(path):
        raise PolicyConfigError(f"Password blacklist {value!r} not found")
    return path


@functools.lru_cache(maxsize=16)
def _blacklist_words(path, mtime):
    with open(path, encoding="utf-8") as f:
        return frozenset(line.strip().lower() for line in f if line.strip())


# Checks (Keycloak's validate): each tells whether the password breaks the policy ---------------

def _count(predicate, password):
    return sum(1 for c in password if predicate(c))


def _fewer(predicate):
    return lambda n, user, password: _count(predicate, password) < n


def _special(c):
    return not c.isalnum()


def _blacklisted(path, user, password):
    try:
        words = _blacklist_words(path, os.stat(path).st_mtime_ns)
    except OSError:
        # The file went away after the policy was set: refuse rather than let any password through.
        logger.error("password blacklist %s cannot be read", path)
        raise PasswordPolicyError(*GENERIC) from None
    return password.lower() in words


@dataclass(frozen=True)
class _Kind:
    parse: object
    broken: object = None  # None: the policy shapes storage or sign-in, it refuses no password
    key: str = ""  # Keycloak's message key, and its English text ({0}: the policy's value)
    message: str = ""


# Keycloak's policy ids with their defaults (a policy given without a value takes its default).
KINDS = {
    "length": _Kind(_number(8), lambda n, user, password: len(password) < n,
                    "invalidPasswordMinLengthMessage", "Invalid password: minimum length {0}."),
    "maxLength": _Kind(_number(64), lambda n, user, password: len(password) > n,
                       "invalidPasswordMaxLengthMessage", "Invalid password: maximum length {0}."),
    "digits": _Kind(_number(1), _fewer(str.isdigit), "invalidPasswordMinDigitsMessage",
                    "Invalid password: must contain at least {0} numerical digits."),
    "lowerCase": _Kind(_number(1), _fewer(str.islower), "invalidPasswordMinLowerCaseCharsMessage",
                       "Invalid password: must contain at least {0} lower case characters."),
    "upperCase": _Kind(_number(1), _fewer(str.isupper), "invalidPasswordMinUpperCaseCharsMessage",
                       "Invalid password: must contain at least {0} upper case characters."),
    "specialChars": _Kind(_number(1), _fewer(_special), "invalidPasswordMinSpecialCharsMessage",
                          "Invalid password: must contain at least {0} special characters."),
    "notUsername": _Kind(_ignored, lambda _, user, password: user.username == password,
                         "invalidPasswordNotUsernameMessage", "Invalid password: must not be equal to the username."),
    "notEmail": _Kind(_ignored, lambda _, user, password: bool(user.email) and user.email.lower() == password.lower(),
                      "invalidPasswordNotEmailMessage", "Invalid password: must not be equal to the email."),
    "notContainsUsername": _Kind(
        _ignored, lambda _, user, password: bool(user.username) and user.username.lower() in password.lower(),
        "invalidPasswordNotContainsUsernameMessage", "Invalid password: Can not contain the username."),
    "regexPattern": _Kind(_regex, lambda pattern, user, password: not pattern.fullmatch(password),
                          "invalidPasswordRegexPatternMessage", "Invalid password: fails to match regex pattern(s)."),
    "passwordBlacklist": _Kind(_blacklist, _blacklisted, "invalidPasswordBlacklistedMessage",
                               "Invalid password: password is blacklisted."),
    # Checked against the stored hashes (_reused), after the rules above.
    "passwordHistory": _Kind(_number(3), None, "invalidPasswordHistoryMessage",
                             "Invalid password: must not be equal to any of last {0} passwords."),
    "forceExpiredPasswordChange": _Kind(_number(365)),
    "hashAlgorithm": _Kind(_hash_algorithm),
    "hashIterations": _Kind(_number(-1)),
    "maxAuthAge": _Kind(_number(DEFAULT_MAX_AUTH_AGE)),
}


class Policy:
    """A parsed policy string: {policy id: parsed value}."""

    def __init__(self, config):
        self.config = config

    @property
    def hash_algorithm(self):
        return self.config.get("hashAlgorithm", DEFAULT_HASH_ALGORITHM)

    @property
    def hash_iterations(self):
        iterations = self.config.get("hashIterations", -1)
        return _DEFAULT_ITERATIONS[self.hash_algorithm] if iterations <= 0 else iterations

    @property
    def history(self):
        return self.config.get("passwordHistory", 0)


@functools.lru_cache(maxsize=256)
def parse(policy_string) -> Policy:
    """Keycloak's parser: ``id`` or ``id(value)`` joined by `` and ``; a later id replaces an
    earlier one, as in Keycloak. Raises PolicyConfigError naming the policy."""
    config = {}
    for part in (policy_string or "").split(" and "):
        part = part.strip()
        if not part:
            continue
        name, paren, rest = part.partition("(")
        name = name.strip()
        if paren and not rest.endswith(")"):
            raise PolicyConfigError(f"Invalid config for {name}: missing closing parenthesis")
        kind = KINDS.get(name)
        if kind is None:
            raise PolicyConfigError(f"Password policy not found: {name!r} is not a password policy this server "
                                    f"knows ({', '.join(KINDS)})")
        try:
            config[name] = kind.parse(rest[:-1] if paren else None)
        except PolicyConfigError as exc:
            raise PolicyConfigError(f"Invalid config for {name}: {exc}") from None
    return Policy(config)


def policy_of(realm) -> Policy:
    try:
        return parse(realm.password_policy)
    except PolicyConfigError as exc:
        # Stored before policies were checked (or its blacklist directory changed): setting a
        # password fails closed (``validate``); sign-in goes on under Keycloak's defaults and the
        # operator is told.
        logger.error("realm %s: password policy %r cannot be enforced: %s", realm.name, realm.password_policy, exc)
        raise


def max_auth_age(realm):
    """Seconds a sign-in may be old for an application-initiated password change."""
    return _policy_or_default(realm).config.get("maxAuthAge", DEFAULT_MAX_AUTH_AGE)


def _policy_or_default(realm):
    try:
        return policy_of(realm)
    except PolicyConfigError:
        return Policy({})


# Setting a password ----------------------------------------------------------------------------

def validate(user, password):
    """Raise PasswordPolicyError with the first rule ``password`` breaks for ``user``."""
    try:
        policy = policy_of(user.realm)
    except PolicyConfigError:
        raise PasswordPolicyError(*GENERIC) from None
    for name, value in policy.config.items():
        kind = KINDS[name]
        if kind.broken is not None and kind.broken(value, user, password):
            raise PasswordPolicyError(kind.key, kind.message.format(value), value)
    if policy.history and not user._state.adding and _reused(user, password, policy.history):
        kind = KINDS["passwordHistory"]
        raise PasswordPolicyError(kind.key, kind.message.format(policy.history), policy.history)


def _reused(user, password, n):
    # The current password and the n-1 before it (Keycloak's passwordHistory counts the current one).
    held = list(user.credentials.filter(type__in=(PASSWORD, HISTORY)).order_by("-created")
                .values_list("type", "secret_data"))
    current = [s for t, s in held if t == PASSWORD][:1]
    earlier = [s for t, s in held if t == HISTORY][:max(n - 1, 0)]
    return any(check_password(password, encoded) for encoded in current + earlier)


def replace_password(user, encoded):
    """Store ``encoded`` as the user's password; the old one joins the history when the realm
    keeps one (pruned to the policy's length), else it is removed."""
    keep = _policy_or_default(user.realm).history - 1
    new = user.credentials.model(user=user, type=PASSWORD, secret_data=encoded)
    if keep <= 0:  # no history: one statement (a user's every password change runs it)
        rows.replace(new, "user_id = %s AND type IN (%s, %s)", [user.pk, PASSWORD, HISTORY])
        return
    user.credentials.filter(type=PASSWORD).update(type=HISTORY, priority=0)
    history = user.credentials.filter(type=HISTORY).order_by("-created").values_list("pk", flat=True)
    user.credentials.filter(type=HISTORY).exclude(pk__in=list(history[:keep])).delete()
    rows.insert(new)


# Hashing ---------------------------------------------------------------------------------------

def _hasher(policy):
    algorithm = policy.hash_algorithm
    if algorithm == "argon2":
        hasher = hashers.Argon2idHasher()
        hasher.time_cost = policy.hash_iterations
        return hasher
    return get_hasher(_HASH_ALGORITHMS[algorithm])


def hash_password(realm, password):
    """A new hash under the realm's hashAlgorithm and hashIterations."""
    policy = _policy_or_default(realm)
    hasher = _hasher(policy)
    if policy.hash_algorithm == "argon2":
        return hasher.encode(password, hasher.salt())
    return hasher.encode(password, hasher.salt(), policy.hash_iterations)


def needs_rehash(realm, encoded):
    """Whether a verified hash is not what the policy makes now (another algorithm, other
    iterations, an imported Keycloak encoding): it is then replaced at that sign-in."""
    policy = _policy_or_default(realm)
    wanted = _hasher(policy)
    if identify_hasher(encoded).algorithm != wanted.algorithm:
        return True
    if policy.hash_algorithm == "argon2":
        return wanted.must_update(encoded)
    return wanted.decode(encoded)["iterations"] != policy.hash_iterations


# Expiry ----------------------------------------------------------------------------------------

def expired(realm, user):
    """Whether forceExpiredPasswordChange(days) makes the user's password too old."""
    days = _policy_or_default(realm).config.get("forceExpiredPasswordChange")
    if days is None or days == -1:  # Keycloak's "never"; 0 expires every password at once
        return False
    credential = user.password_credential()
    return credential is not None and credential.created + timedelta(days=days) < timezone.now()
