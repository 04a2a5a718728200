"""The realm's user profile, as far as this server stores it: ``username``, ``email``,
``firstName`` and ``lastName`` with Keycloak 26's default rules (e-mail, first and last name
required; names unique in the realm; e-mail unique unless ``duplicateEmailsAllowed``; the e-mail
is the username under ``registrationEmailAsUsername``; the username changes only under
``editUsernameAllowed``; with UPDATE_EMAIL enabled the e-mail changes only through that
action). Used by the registration form and the UPDATE_PROFILE and UPDATE_EMAIL actions; errors
are message keys of the bundle, by field."""
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from ..models import User
from .actions import action_enabled

MAX_LENGTH = 255
FIELDS = (("username", "username"), ("email", "email"), ("firstName", "first_name"), ("lastName", "last_name"))
UPDATE_EMAIL = "UPDATE_EMAIL"


def update_email_enabled(realm):
    """Keycloak's UPDATE_EMAIL required action is enabled in the realm: a user's address then
    changes only through it (confirmed by a link when the realm verifies addresses)."""
    return action_enabled(realm, UPDATE_EMAIL)


def email_editable(realm, user):
    """Whether the profile form changes the address: always at registration; otherwise unless
    UPDATE_EMAIL is enabled and the user has an address (Keycloak's UPDATE_PROFILE context)."""
    return user is None or not user.email or not update_email_enabled(realm)


def values(user):
    """The form's fields of ``user`` by their Keycloak names."""
    return {name: getattr(user, attr) for name, attr in FIELDS} if user is not None else {}


def username_editable(realm, user):
    if realm.registration_email_as_username:
        return False
    return user is None or realm.edit_username_allowed


def validate(realm, user, data):
    """(cleaned values by model field, errors by form field) for ``data`` (a QueryDict or dict);
    ``user`` is None for a registration."""
    got = {name: (data.get(name) or "").strip() for name, _ in FIELDS}
    cleaned, errors = {}, {}
    email = got["email"].lower()
    if not email_editable(realm, user):
        # Read-only here (UPDATE_EMAIL changes it): absent means unchanged, a new value is refused.
        if email and email != user.email and not realm.registration_email_as_username:
            errors["email"] = "error-user-attribute-read-only"
        email = user.email
    error = check_email(realm, user, email)
    if error:
        errors["email"] = error
    else:
        cleaned["email"] = email
    if realm.registration_email_as_username:
        username = email
    elif username_editable(realm, user):
        username = got["username"].lower()
        if not username:
            errors["username"] = "missingUsernameMessage"
        elif len(username) > MAX_LENGTH or any(c in username for c in "<>&\"'\\/ \t"):
            errors["username"] = "invalidUsernameMessage"
        elif _username_taken(realm, user, username):
            errors["username"] = "usernameExistsMessage"
    else:
        username = user.username
    if username:
        cleaned["username"] = username
    for name, attr, missing in (("firstName", "first_name", "missingFirstNameMessage"),
                                ("lastName", "last_name", "missingLastNameMessage")):
        if not got[name]:
            errors[name] = missing
        elif len(got[name]) > MAX_LENGTH or any(c in got[name] for c in "<>&\"$%!#?§;*~/\\|^=[]{}()"):
            errors[name] = "invalidPersonNameMessage"
        else:
            cleaned[attr] = got[name]
    return cleaned, errors


def check_email(realm, user, email):
    """The error key for ``email`` as the address of ``user`` (None for a registration), or None:
    present, well-formed, not another user's (unless ``duplicateEmailsAllowed``), and not another
    user's username when the e-mail is the username."""
    if not email:
        return "missingEmailMessage"
    if len(email) > MAX_LENGTH or not _valid_email(email):
        return "invalidEmailMessage"
    others = User.objects.filter(realm=realm, email__iexact=email)
    if user is not None:
        others = others.exclude(pk=user.pk)
    if not realm.duplicate_emails_allowed and others.exists():
        return "emailExistsMessage"
    if realm.registration_email_as_username and _username_taken(realm, user, email):
        return "emailExistsMessage"
    return None


def apply(user, cleaned):
    """Store ``cleaned`` on ``user``; a changed e-mail address is no longer verified. Returns
    the previous e-mail address when it changed, else None."""
    previous = user.email
    for attr, value in cleaned.items():
        setattr(user, attr, value)
    if cleaned.get("email", previous) != previous:
        user.email_verified = False
        return previous
    return None


def _valid_email(value):
    try:
        validate_email(value)
    except ValidationError:
        return False
    return True


def _username_taken(realm, user, username):
    others = User.objects.filter(realm=realm, username=username)
    if user is not None:
        others = others.exclude(pk=user.pk)
    return others.exists()
