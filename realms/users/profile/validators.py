"""Keycloak 26's built-in user-profile validators, by the name a UPConfig gives them under an
attribute's ``validations``: each checks its config when the profile is stored (``check``, a
``ConfigError`` naming the validator) and an attribute's values when a user is written
(``validate``: a list of ``(message key, params)``, the params after the attribute's display name,
as Keycloak's messages number them from ``{1}``)."""
import re
import unicodedata
from datetime import date
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from ...errors import RealmsError

IGNORE_EMPTY = "ignore.empty.value"
# Keycloak's own lists: what a person's name and a username may not contain.
_PERSON_NAME_FORBIDDEN = set("<>&\"$%!#?§;*~/\\|^=[]{}()")
_USERNAME_FORBIDDEN = set("<>&\"'\\/ \t$%!#?§,;:*~|^=[]{}()`")


class ConfigError(RealmsError):
    """A UPConfig the server refuses; ``str()`` says which part and why."""


def _int(config, key, where):
    value = config.get(key)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: '{key}' must be an integer") from None


def _float(config, key, where):
    value = config.get(key)
    if value is None or value == "":
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: '{key}' must be a number") from None


def _bool(config, key, where, default):
    value = config.get(key, default)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ConfigError(f"{where}: '{key}' must be true or false")


def _str_list(config, key, where):
    value = config.get(key, [])
    if isinstance(value, str):  # the admin console sends one value as a string
        value = [value]
    if not isinstance(value, list) or not all(isinstance(x, str | int | float) for x in value):
        raise ConfigError(f"{where}: '{key}' must be a list of strings")
    return [str(x) for x in value]


def _range(value, low, high, both, too_small, too_big):
    """The error of ``value`` outside [low, high] as Keycloak words it (both bounds given or one)."""
    if (low is not None and value < low) or (high is not None and value > high):
        if low is not None and high is not None:
            return both
        return too_small if low is not None else too_big
    return None


class Validator:
    name = ""
    keys = frozenset()

    def check(self, config, where):
        """The config, or ConfigError: an unknown key is refused rather than ignored."""
        unknown = set(config) - self.keys - {IGNORE_EMPTY}
        if unknown:
            raise ConfigError(f"{where}: unknown option(s) {', '.join(sorted(unknown))} "
                              f"(supported: {', '.join(sorted(self.keys | {IGNORE_EMPTY}))})")
        _bool(config, IGNORE_EMPTY, where, True)
        self.parse(config, where)

    def parse(self, config, where):
        """Extra checks of the config's values."""

    def validate(self, values, config):
        if self.name == "multivalued":
            return self.check_values(values, config)
        errors = []
        ignore_empty = _bool(config, IGNORE_EMPTY, "", True)
        for value in values:
            if value in ("", None) and ignore_empty:
                continue
            error = self.check_value(value, config)
            if error and error not in errors:
                errors.append(error)
        return errors

    def check_value(self, value, config):
        raise NotImplementedError


class Length(Validator):
    name, keys = "length", frozenset({"min", "max", "trim-disabled"})

    def parse(self, config, where):
        low, high = _int(config, "min", where), _int(config, "max", where)
        if low is None and high is None:
            raise ConfigError(f"{where}: 'min' or 'max' is required")
        _bool(config, "trim-disabled", where, False)

    def check_value(self, value, config):
        low, high = _int(config, "min", ""), _int(config, "max", "")
        if not _bool(config, "trim-disabled", "", False):
            value = value.strip()
        error = _range(len(value), low, high, "error-invalid-length", "error-invalid-length-too-short",
                       "error-invalid-length-too-long")
        return (error, (low, high)) if error else None


class Pattern(Validator):
    name, keys = "pattern", frozenset({"pattern", "error-message"})

    def parse(self, config, where):
        if not isinstance(config.get("pattern"), str) or not config["pattern"]:
            raise ConfigError(f"{where}: 'pattern' is required")
        try:
            re.compile(config["pattern"])
        except re.error as exc:
            raise ConfigError(f"{where}: 'pattern' is not a valid regular expression ({exc})") from None

    def check_value(self, value, config):
        if re.fullmatch(config["pattern"], value) is None:
            return (config.get("error-message") or "error-pattern-no-match", (config["pattern"],))
        return None


class Email(Validator):
    name, keys = "email", frozenset({"max-local-length"})

    def parse(self, config, where):
        _int(config, "max-local-length", where)

    def check_value(self, value, config):
        limit = _int(config, "max-local-length", "") or 64
        try:
            validate_email(value)
        except ValidationError:
            return ("error-invalid-email", ())
        if len(value.rpartition("@")[0]) > limit:
            return ("error-invalid-email", ())
        return None


class Integer(Validator):
    name, keys = "integer", frozenset({"min", "max"})
    number = staticmethod(int)

    def parse(self, config, where):
        for key in ("min", "max"):
            _int(config, key, where) if self.number is int else _float(config, key, where)

    def check_value(self, value, config):
        try:
            number = self.number(value)
        except (TypeError, ValueError):
            return ("error-invalid-number", ())
        low, high = (config.get("min"), config.get("max"))
        low = None if low in (None, "") else self.number(low)
        high = None if high in (None, "") else self.number(high)
        error = _range(number, low, high, "error-number-out-of-range", "error-number-out-of-range-too-small",
                       "error-number-out-of-range-too-big")
        return (error, (low, high)) if error else None


class Double(Integer):
    name = "double"
    number = staticmethod(float)


class Uri(Validator):
    name, keys = "uri", frozenset({"allowedSchemes", "allowFragment", "requireValidUrl"})

    def parse(self, config, where):
        _str_list(config, "allowedSchemes", where)
        _bool(config, "allowFragment", where, True)
        _bool(config, "requireValidUrl", where, True)

    def check_value(self, value, config):
        try:
            parts = urlsplit(value)
        except ValueError:
            return ("error-invalid-uri", ())
        # Keycloak requires a URL (a scheme) unless requireValidUrl is false
        if " " in value or (not parts.scheme and _bool(config, "requireValidUrl", "", True)):
            return ("error-invalid-uri", ())
        schemes = _str_list(config, "allowedSchemes", "")
        if schemes and parts.scheme not in schemes:
            return ("error-invalid-uri-scheme", ())
        if parts.fragment and not _bool(config, "allowFragment", "", True):
            return ("error-invalid-uri-fragment", ())
        return None


class Options(Validator):
    name, keys = "options", frozenset({"options"})

    def parse(self, config, where):
        if not _str_list(config, "options", where):
            raise ConfigError(f"{where}: 'options' must list the allowed values")

    def check_value(self, value, config):
        return None if value in _str_list(config, "options", "") else ("error-invalid-value", ())


class LocalDate(Validator):
    name = "local-date"

    def check_value(self, value, config):
        try:
            date.fromisoformat(value)
        except ValueError:
            return ("error-invalid-date", ())
        return None


class PersonName(Validator):
    name, keys = "person-name-prohibited-characters", frozenset({"error-message"})

    def check_value(self, value, config):
        if any(c in _PERSON_NAME_FORBIDDEN for c in value):
            return (config.get("error-message") or "error-person-name-invalid-character", ())
        return None


class Username(Validator):
    name, keys = "username-prohibited-characters", frozenset({"error-message"})

    def check_value(self, value, config):
        if any(c in _USERNAME_FORBIDDEN for c in value):
            return (config.get("error-message") or "error-username-invalid-character", ())
        return None


class IdnHomograph(Validator):
    """A username that renders like another: any character outside ASCII (Keycloak refuses a name
    whose IDN form differs from the name)."""

    name, keys = "up-username-not-idn-homograph", frozenset({"error-message"})

    def check_value(self, value, config):
        normal = unicodedata.normalize("NFKC", value)
        if normal != value or not value.isascii():
            return (config.get("error-message") or "error-username-invalid-character", ())
        return None


class Multivalued(Validator):
    name, keys = "multivalued", frozenset({"min", "max"})

    def parse(self, config, where):
        if _int(config, "max", where) is None:
            raise ConfigError(f"{where}: 'max' is required")
        _int(config, "min", where)

    def check_values(self, values, config):
        count = len([v for v in values if v not in ("", None)])
        low, high = _int(config, "min", "") or 0, _int(config, "max", "")
        if count < low or count > high:
            return [("error-invalid-multivalued-size", (low, high))]
        return []


BUILTIN = {v.name: v for v in (Length(), Pattern(), Email(), Integer(), Double(), Uri(), Options(), LocalDate(),
                               PersonName(), Username(), IdnHomograph(), Multivalued())}


def check(name, config, where):
    validator = BUILTIN.get(name)
    if validator is None:
        raise ConfigError(f"{where}: unknown validator '{name}' (supported: {', '.join(sorted(BUILTIN))})")
    if not isinstance(config, dict):
        raise ConfigError(f"{where}: the validator's configuration must be an object")
    validator.check(config, where)


def validate(name, values, config):
    return BUILTIN[name].validate(values, config)
