"""User storage providers (Keycloak's UserStorageProvider SPI), protocol-neutral.

Where a realm's users live: the realm database (the built-in provider, always first) and the
user storage components configured on the realm (``Component`` rows of type
``org.keycloak.storage.UserStorageProvider``: LDAP, or a test's dict of users). A provider
factory is registered under its Keycloak provider id from an ``AppConfig.ready()``
(``register_provider``); ``provider_for(component)`` builds the provider for a stored component.

Providers work in Keycloak's import mode: a user found in an external store is imported as a
``User`` row whose ``federation_link`` is the component, and that provider then validates the
user's credentials. A federated user whose component has no registered provider (LDAP on a
server without the federation code, a provider removed from the configuration) is *unavailable*:
sign-in refuses them, never falling back to a local password.

Some providers also authenticate a user from a credential alone, without a name first (Keycloak's
CredentialAuthentication): a Kerberos SPNEGO token, which the browser flow's ``auth-spnego`` step
hands to ``authenticate_by_credential``.
"""
from dataclasses import dataclass, field

from ..credentials import get_credential_type
from ..credentials.password_policy import PasswordPolicyError
from ..data import crypto, rows
from ..errors import RealmsError
from ..models import Component, Credential, User
from ..registry import Registry

USER_STORAGE = Component.USER_STORAGE
KERBEROS = "kerberos"  # the credential type of an SPNEGO token (Keycloak's UserCredentialModel.KERBEROS)


@dataclass
class CredentialOutput:
    """What a provider answers for a credential that names its user (Keycloak's
    CredentialValidationOutput): the user, another round of the exchange (``response_token`` to
    send back), or a refusal. ``response_token`` on success is the exchange's last token (SPNEGO's
    mutual authentication)."""
    AUTHENTICATED, CONTINUE, FAILED = "authenticated", "continue", "failed"
    status: str
    user: object = None
    response_token: str = ""
    state: dict = field(default_factory=dict)

    @classmethod
    def authenticated(cls, user, response_token=""):
        return cls(cls.AUTHENTICATED, user, response_token)

    @classmethod
    def continued(cls, response_token):
        return cls(cls.CONTINUE, response_token=response_token)

    @classmethod
    def failed(cls):
        return cls(cls.FAILED)


class UserStorageProvider:
    """One store of users. Lookups answer a realm ``User`` (imported when the store is external)
    or None; ``validate`` checks a secret of the given credential type."""

    def get_user_by_id(self, realm, user_id):
        raise NotImplementedError

    def get_user_by_username(self, realm, username):
        raise NotImplementedError

    def get_user_by_email(self, realm, email):
        raise NotImplementedError

    def search(self, realm, query, first=0, max_results=100):
        """Users whose username, e-mail or name contains ``query``, a page at a time."""
        raise NotImplementedError

    def validate(self, realm, user, credential_type, secret) -> bool:
        raise NotImplementedError

    def is_configured_for(self, realm, user, credential_type) -> bool:
        """Whether the user has a credential of this type in this store (conditional sub-flows
        ask it: Keycloak's isConfiguredFor)."""
        raise NotImplementedError

    def update_credential(self, realm, user, credential_type, secret) -> bool:
        """Write a new secret back to the store; False when the store is read-only (default).
        May raise ``password_policy.PasswordPolicyError`` with the store's reason."""
        return False

    def authenticate_credential(self, realm, credential_type, value) -> "CredentialOutput | None":
        """The user a self-contained credential proves (a Kerberos ticket), or None when this
        provider does not take credentials of this type (default)."""
        return None

    def refresh(self, realm, user):
        """``user`` found in the realm database, made current (an external store whose rows are a
        cache reads the entry again when it is stale); None when the store no longer has them."""
        return user

    def remove_user(self, realm, user):
        """The store's side of deleting ``user`` (a writable directory removes the entry); the
        realm database's row is deleted by ``delete_user`` afterwards. Nothing by default."""


class RealmDatabase(UserStorageProvider):
    """The built-in provider: users and credentials in the realm's own tables."""

    def get_user_by_id(self, realm, user_id):
        # Raw queries here (``realms.data.rows``): every sign-in runs them (each step of a sign-in
        # reads its user by id), and the ORM's query compiler costs more CPU than the database
        # spends answering.
        return _one_user(realm, "realm_id = %s AND id = %s", [realm.pk, user_id])

    def get_user_by_username(self, realm, username):
        # The same as the ORM's username__iexact.
        return _one_user(realm, "realm_id = %s AND UPPER(username) = UPPER(%s) AND service_account_client_id IS NULL "
                         "ORDER BY username LIMIT 1", [realm.pk, username])

    def get_user_by_email(self, realm, email):
        matches = list(User.objects.filter(realm=realm, email__iexact=email)[:2])
        return matches[0] if len(matches) == 1 else None  # an e-mail two users share names nobody

    def search(self, realm, query, first=0, max_results=100):
        from django.db.models import Q

        match = (Q(username__icontains=query) | Q(email__icontains=query) | Q(first_name__icontains=query)
                 | Q(last_name__icontains=query))
        return list(User.objects.filter(realm=realm, service_account_client__isnull=True)
                    .filter(match).order_by("username")[first:first + max_results])

    def validate(self, realm, user, credential_type, secret):
        kind = get_credential_type(credential_type)
        return kind is not None and kind.verify(user, secret)

    def is_configured_for(self, realm, user, credential_type):
        kind = get_credential_type(credential_type)
        return kind is not None and kind.configured_for(user)

    def update_credential(self, realm, user, credential_type, secret):
        kind = get_credential_type(credential_type)
        if kind is None:
            return False
        kind.create(user, secret)
        return True


def _one_user(realm, where, params):
    user = next(iter(rows.fetch(User, where, params)), None)
    if user is not None:
        user.realm = realm  # the checks read the realm's policies without a query
    return user


REALM_DATABASE = RealmDatabase()
_factories = Registry("user storage providers")
_validators = Registry("component validators")
_secrets = Registry("secret component config")  # provider id -> config entries kept encrypted at rest
_SEALED = "$enc$"


class InvalidConfig(RealmsError, ValueError):
    """A component configuration its provider cannot run with (Keycloak's ComponentValidationException)."""


def register_provider(provider_id, factory, validate=None, secret_config=()):
    """``factory(component) -> UserStorageProvider`` for components with this provider id;
    ``validate`` as for ``register_validator``;
    ``secret_config`` names config entries (a bind credential) stored encrypted
    (``seal_config`` before a save) and given in clear by ``open_config``."""
    _factories.add(provider_id, factory)
    _secrets.add(provider_id, tuple(secret_config))
    if validate is not None:
        register_validator(provider_id, validate)


def register_validator(provider_id, validate):
    """``validate(config, parent_config)`` raises InvalidConfig for a multivalued config that
    components with this provider id (a provider, or a provider's sub-component such as an
    LDAP mapper, whose parent's config is given) cannot run with."""
    _validators.add(provider_id, validate)


def validate_config(provider_id, config, parent_config=None):
    """Raise InvalidConfig when the validator registered for ``provider_id`` refuses ``config``
    (importing or saving a component calls it)."""
    validator = _validators.get(provider_id)
    if validator is not None:
        validator(config, parent_config)


def seal_config(component):
    """Encrypt the component's secret config values that are not yet (``realms.data.crypto``)."""
    for name in _secrets.get(component.provider_id, ()):
        values = component.config.get(name)
        if values:
            component.config[name] = [v if v.startswith(_SEALED) else _SEALED + crypto.encrypt(v) for v in values]


def reseal_config(config):
    """``config`` with every sealed value under the current SECRET_KEY, or None when all are
    already (``realms.data.sealed``, after a key rotation)."""
    def one(value):
        new = crypto.reseal(value[len(_SEALED):]) if isinstance(value, str) and value.startswith(_SEALED) else None
        return value if new is None else _SEALED + new

    resealed = {name: [one(v) for v in values] if isinstance(values, list) else values for name, values in config.items()}
    return resealed if resealed != config else None


def open_config(component):
    """The component's config with its secret values in clear (export, the provider itself)."""
    config = dict(component.config)
    for name in _secrets.get(component.provider_id, ()):
        if config.get(name):
            config[name] = [crypto.decrypt(v[len(_SEALED):]) if v.startswith(_SEALED) else v for v in config[name]]
    return config


def is_available(provider_id):
    return provider_id in _factories


def provider_for(component):
    """The provider serving a stored component, or None when none is registered for it."""
    factory = _factories.get(component.provider_id)
    if factory is None or component.get("enabled", "true").lower() == "false":
        return None
    return factory(component)


class Unavailable(RealmsError):
    """A federated user whose storage provider is not available on this server."""


def provider_of(user):
    """The provider that validates ``user``'s credentials; raises Unavailable for a federated user
    whose provider is missing or disabled."""
    if user.federation_link_id is None:
        return REALM_DATABASE
    provider = provider_for(user.federation_link)
    if provider is None:
        raise Unavailable(user.federation_link_id)
    return provider


def is_configured_for(realm, user, credential_type):
    """Whether ``user`` can present a credential of this type (False when their store is
    unavailable)."""
    try:
        return provider_of(user).is_configured_for(realm, user, credential_type)
    except Unavailable:
        return False


def _external(realm):
    """The realm's available external providers, by Keycloak's ``priority`` (lowest first)."""
    if not _factories:
        return []  # nothing registered: no query on the hot path
    components = Component.objects.filter(realm=realm, provider_type=USER_STORAGE,
                                          provider_id__in=list(_factories))
    return [p for p in map(provider_for, sorted(components, key=_priority)) if p is not None]


def _priority(component):
    try:
        return int(component.get("priority", "0"))
    except ValueError:
        return 0  # an unreadable priority sorts first rather than failing every sign-in


def find_user(realm, username):
    """The user named ``username`` (case-insensitive, as Keycloak stores names lower-case), or
    with that e-mail address when the realm allows it: the realm database first, then each
    external provider in priority order."""
    user = REALM_DATABASE.get_user_by_username(realm, username)
    if user is not None:
        return _current(realm, user)
    by_email = realm.login_with_email_allowed and "@" in username
    if by_email:
        user = REALM_DATABASE.get_user_by_email(realm, username)
        if user is not None:
            return _current(realm, user)
    for provider in _external(realm):
        try:
            user = provider.get_user_by_username(realm, username) or (
                provider.get_user_by_email(realm, username) if by_email else None)
        except Unavailable:
            continue  # a store that cannot be reached knows nobody for now; the others may
        if user is not None:
            return user
    return None


def authenticate_by_credential(realm, credential_type, value):
    """The first answer of the realm's providers that take credentials of this type (Keycloak's
    getUserByCredential), or None when none does."""
    for provider in _external(realm):
        output = provider.authenticate_credential(realm, credential_type, value)
        if output is not None:
            return output
    return None


def _current(realm, user):
    """A federated user as their store has them now (``refresh``); unchanged when the store is
    unavailable (the password check then answers for it)."""
    if user.federation_link_id is None:
        return user
    try:
        return provider_of(user).refresh(realm, user)
    except Unavailable:
        return user


class ReadOnly(PasswordPolicyError):
    """The user's store keeps their password and takes no new one (a READ_ONLY directory, a
    Kerberos realm): Keycloak's ReadOnlyException, with the message its pages show."""

    def __init__(self):
        super().__init__("readOnlyPasswordMessage", "You can't update your password as your account is read only.")


def set_password(realm, user, password):
    """The one way a user's password is set, by every writer (console, Admin API, SCIM,
    registration, account console, required actions): in the user's store, the realm database
    under the realm's policy or the directory under its own. Raises
    ``password_policy.PasswordPolicyError`` (ReadOnly where the store takes none), or Unavailable
    when the user's store cannot be reached."""
    if not provider_of(user).update_credential(realm, user, Credential.PASSWORD, password):
        raise ReadOnly()


def delete_user(realm, user):
    """The one way a user is deleted: from the user's store (Keycloak's removeUser), then here.
    Raises Unavailable when the user's store cannot be reached (the user is then kept)."""
    if user.federation_link_id is not None:
        provider = provider_for(user.federation_link)
        if provider is not None:  # a provider gone from this server: only the row is left to delete
            provider.remove_user(realm, user)
    user.delete()
