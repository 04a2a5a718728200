"""The user profile as the account service shows and changes it: the realm's declarative profile
in Keycloak's ACCOUNT context (``realms.users.profile``: which attributes the user sees and
edits, which are required, their validators), and ``locale`` when the realm's
internationalization is on. Errors carry Keycloak's message keys, so the console translates
them and a client written for Keycloak reads the same JSON."""
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from ..http import messages
from ..models import User
from ..users import profile as declarative
from ..users.user_profile import update_email_enabled

MAX_LENGTH = 255
_NAMES = {"username": "username", "email": "email", "firstName": "first_name", "lastName": "last_name"}


def _readonly(realm, name):
    if name == "username":
        return realm.registration_email_as_username or not realm.edit_username_allowed
    if name == "email":  # Keycloak's ACCOUNT context: the UPDATE_EMAIL action changes it, nothing else
        return update_email_enabled(realm)
    return False


def metadata(realm, prof=None):
    """``userProfileMetadata``: each attribute the user sees with its display name (a message
    key), whether it is required or read-only, its validators and annotations, and its group."""
    meta = (prof or declarative.Profile(realm, declarative.ACCOUNT)).metadata()
    for attr in meta["attributes"]:
        if attr["name"] in _NAMES and _readonly(realm, attr["name"]):
            attr["readOnly"], attr["required"] = True, False
        elif attr["name"] == "username":  # a user always has one
            attr["required"] = True
        if attr["name"] == "email":
            attr.setdefault("annotations", {"inputType": "html5-email"})
    if realm.internationalization_enabled:
        meta["attributes"].append({"name": "locale", "displayName": "${locale}", "required": False,
                                   "readOnly": False, "validators": {}, "multivalued": False})
    return meta


def representation(user, *, with_metadata=True):
    rep = {"id": user.pk, "username": user.username, "firstName": user.first_name, "lastName": user.last_name,
           "email": user.email, "emailVerified": user.email_verified}
    prof = declarative.Profile(user.realm, declarative.ACCOUNT)
    attributes = {k: v for k, v in prof.visible_attributes(user.attributes).items() if k != "locale"}
    locale = (user.attributes or {}).get("locale")
    if user.realm.internationalization_enabled and locale:
        attributes["locale"] = locale if isinstance(locale, list) else [locale]
    if attributes:
        rep["attributes"] = attributes
    if with_metadata:
        rep["userProfileMetadata"] = metadata(user.realm, prof)
    return rep


def _error(field, key, *params):
    return {"field": field, "errorMessage": key, "params": ["${%s}" % field, *params]}


def _message_error(field, message):
    return {"field": field, "errorMessage": message.key, "params": [str(p) for p in message.args]}


def _string(value):
    if isinstance(value, list):
        value = value[0] if value else ""
    return value.strip() if isinstance(value, str) else ""


def validate(user, data):
    """``(changes, errors)``: the model fields to set, or Keycloak's errors for each attribute."""
    realm = user.realm
    prof = declarative.Profile(realm, declarative.ACCOUNT)
    changes, problems, final = {}, [], {}
    for name, field in _NAMES.items():
        current = getattr(user, field)
        value = _string(data.get(name, current if name == "username" else None))
        if name == "username":
            value = value.lower()  # Keycloak keeps usernames in lower case
        if _readonly(realm, name):
            if name == "email":
                # Keycloak's immutable-attribute check, which lets the e-mail pass (unchanged)
                # when it is the username.
                if value and value.lower() != current.lower() and not realm.registration_email_as_username:
                    problems.append(_error(name, "error-user-attribute-read-only"))
            elif value and value != current:
                problems.append(_error(name, "updateReadOnlyAttributesRejectedMessage"))
            continue
        if not value:
            if name == "username" or (name in prof.by_name and prof.by_name[name].required):
                problems.append(_error(name, "error-user-attribute-required"))
            elif current:
                changes[field] = ""
        elif len(value) > MAX_LENGTH or (name == "username" and len(value) < 3):
            problems.append(_error(name, "error-invalid-length", *(["3"] if name == "username" else []),
                                   str(MAX_LENGTH)))
        elif name == "email" and not _is_email(value):
            problems.append(_error(name, "invalidEmailMessage"))
        else:
            final[name] = [value]
            if value != current:
                changes[field] = value
    if "email" in changes and not realm.duplicate_emails_allowed and User.objects.filter(
            realm=realm, email__iexact=changes["email"]).exclude(pk=user.pk).exists():
        problems.append(_error("email", "emailExistsMessage"))
    if "username" in changes and User.objects.filter(realm=realm, username=changes["username"]).exclude(
            pk=user.pk).exists():
        problems.append(_error("username", "usernameExistsMessage"))
    attributes = data.get("attributes") if isinstance(data.get("attributes"), dict) else {}
    own = {k: v for k, v in declarative.as_lists(attributes).items() if k != "locale"}
    reported = {p["field"] for p in problems}
    custom = {a.name: own.get(a.name, list((user.attributes or {}).get(a.name, []))) for a in prof.custom()}
    for name, message in prof.check({**final, **custom}, skip=reported | (set(_NAMES) - set(final))):
        problems.append(_message_error(name, message))
    merged, refused = prof.merge_attributes(user.attributes, own, remove_missing=False)
    problems += [_error(name, "error-user-attribute-read-only") for name in refused]
    if merged != {k: v for k, v in (user.attributes or {}).items() if v}:
        changes["attributes"] = merged
    if realm.internationalization_enabled and "locale" in attributes:
        locale = _string(attributes["locale"])
        if locale and locale not in (realm.supported_locales or []):
            problems.append(_error("locale", "error-invalid-value"))
        else:
            changes["locale"] = locale
    return changes, problems


def _is_email(value):
    try:
        validate_email(value)
    except ValidationError:
        return False
    return True


def update(user, data):
    """Apply ``data`` (Keycloak's account UserRepresentation) to the user; the errors, or []."""
    changes, problems = validate(user, data)
    if problems:
        return problems
    locale = changes.pop("locale", None)
    if locale is not None:
        attributes = dict(changes.get("attributes", user.attributes) or {})
        if locale:
            attributes["locale"] = [locale]
        else:
            attributes.pop("locale", None)
        user.attributes = attributes
        changes["attributes"] = attributes
    if "email" in changes:
        user.email_verified = False
        changes["email_verified"] = False
    for field, value in changes.items():
        setattr(user, field, value)
    if changes:
        user.save(update_fields=list(changes))
    return []


def error_body(problems):
    """Keycloak's ErrorRepresentation: the first error at the top, all of them in ``errors``."""
    first = problems[0]
    return {**first, "errors": problems}


def scope_text(realm, scope, locale=messages.FALLBACK_LOCALE):
    """A client scope's consent text in ``locale``: ``${key}`` texts come from the account theme."""
    text = scope.attributes.get("consent.screen.text") or scope.name
    if text.startswith("${") and text.endswith("}"):
        return messages.text(realm, locale, text[2:-1], theme=realm.account_theme or messages.DEFAULT_THEME)
    return text
