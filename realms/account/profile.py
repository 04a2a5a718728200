"""The user profile as the account service shows and changes it (Keycloak's default user
profile: ``username``, ``email``, ``firstName``, ``lastName``, and ``locale`` when the realm's
internationalization is on). Errors carry Keycloak's message keys, so the console translates
them and a client written for Keycloak reads the same JSON."""
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from ..http import messages
from ..models import User
from ..users.user_profile import update_email_enabled

MAX_LENGTH = 255
_NAMES = {"username": "username", "email": "email", "firstName": "first_name", "lastName": "last_name"}


def _readonly(realm, name):
    if name == "username":
        return realm.registration_email_as_username or not realm.edit_username_allowed
    if name == "email":  # Keycloak's ACCOUNT context: the UPDATE_EMAIL action changes it, nothing else
        return update_email_enabled(realm)
    return False


def metadata(realm):
    """``userProfileMetadata``: each attribute with its display name (a message key), whether
    it is required or read-only, and its validators."""
    attrs = []
    for name in _NAMES:
        attr = {"name": name, "displayName": "${%s}" % name, "required": True, "readOnly": _readonly(realm, name),
                "validators": {"length": {"max": MAX_LENGTH, **({"min": 3} if name == "username" else {})}},
                "multivalued": False}
        if name == "email":
            attr["validators"]["email"] = {"ignore.empty.value": True}
            attr["annotations"] = {"inputType": "html5-email"}
        attrs.append(attr)
    if realm.internationalization_enabled:
        attrs.append({"name": "locale", "displayName": "${locale}", "required": False, "readOnly": False,
                      "validators": {}, "multivalued": False})
    return {"attributes": attrs, "groups": []}


def representation(user, *, with_metadata=True):
    rep = {"id": user.pk, "username": user.username, "firstName": user.first_name, "lastName": user.last_name,
           "email": user.email, "emailVerified": user.email_verified}
    locale = (user.attributes or {}).get("locale")
    if user.realm.internationalization_enabled and locale:
        rep["attributes"] = {"locale": locale if isinstance(locale, list) else [locale]}
    if with_metadata:
        rep["userProfileMetadata"] = metadata(user.realm)
    return rep


def _error(field, key, *params):
    return {"field": field, "errorMessage": key, "params": ["${%s}" % field, *params]}


def _string(value):
    if isinstance(value, list):
        value = value[0] if value else ""
    return value.strip() if isinstance(value, str) else ""


def validate(user, data):
    """``(changes, errors)``: the model fields to set, or Keycloak's errors for each attribute."""
    realm = user.realm
    changes, problems = {}, []
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
            problems.append(_error(name, "error-user-attribute-required"))
        elif len(value) > MAX_LENGTH or (name == "username" and len(value) < 3):
            problems.append(_error(name, "error-invalid-length", *(["3"] if name == "username" else []),
                                   str(MAX_LENGTH)))
        elif name == "email" and not _is_email(value):
            problems.append(_error(name, "invalidEmailMessage"))
        elif value != current:
            changes[field] = value
    if "email" in changes and not realm.duplicate_emails_allowed and User.objects.filter(
            realm=realm, email__iexact=changes["email"]).exclude(pk=user.pk).exists():
        problems.append(_error("email", "emailExistsMessage"))
    if "username" in changes and User.objects.filter(realm=realm, username=changes["username"]).exclude(
            pk=user.pk).exists():
        problems.append(_error("username", "usernameExistsMessage"))
    attributes = data.get("attributes") if isinstance(data.get("attributes"), dict) else {}
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
        attributes = dict(user.attributes or {})
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
