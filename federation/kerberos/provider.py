"""Keycloak's ``kerberos`` user storage provider: the users of a Kerberos realm, imported on
their first sign-in (by SPNEGO or, when allowed, by password) as realm users linked to the
component, with the ``KERBEROS_PRINCIPAL`` attribute and an e-mail guessed from the principal,
as Keycloak does. Passwords are never stored here: the KDC checks them, except in the UNSYNCED
edit mode, where a password set in this server is kept locally and checked instead."""
import logging

from realms.models import Credential, User
from realms.users import storage
from realms.users.accounts import create_user

from . import gss
from .config import KERBEROS_PRINCIPAL, READ_ONLY, UNSYNCED, KerberosConfig

logger = logging.getLogger("idp.federation.kerberos")


def authenticate_spnego(realm, token, config, name, user_of_principal):
    """One SPNEGO step of a provider taking Kerberos tickets (this one, LDAP's Kerberos
    integration): the token accepted with ``config``'s keytab and ``server_principal``, its
    principal's user found by ``user_of_principal(realm, principal)``. ``name`` is the provider's,
    for the log."""
    accepted = gss.accept(token, config.keytab, config.server_principal, debug=config.debug)
    if accepted.failed:
        return storage.CredentialOutput.failed()
    if not accepted.principal:
        return storage.CredentialOutput.continued(accepted.response_token)
    user = user_of_principal(realm, accepted.principal)
    if user is None:
        logger.info("provider %s: principal %s maps to no user of realm %s", name, accepted.principal, realm.name)
        return storage.CredentialOutput.failed()
    return storage.CredentialOutput.authenticated(user, accepted.response_token)


class KerberosProvider(storage.UserStorageProvider):
    def __init__(self, component):
        self.component = component
        self.config = KerberosConfig.of(component)

    # The principal of a name typed on the form: ``alice`` or ``alice@REALM`` (of this realm only).
    def _username(self, name):
        local, _, kerberos_realm = name.partition("@")
        if kerberos_realm and kerberos_realm != self.config.kerberos_realm:
            return None
        return local or None

    def _principal(self, username):
        return f"{username}@{self.config.kerberos_realm}"

    def get_user_by_id(self, realm, user_id):
        return User.objects.filter(realm=realm, pk=user_id, federation_link=self.component).first()

    def get_user_by_username(self, realm, username):
        username = self._username(username)
        if username is None:
            return None
        try:
            exists = gss.principal_exists(self._principal(username), debug=self.config.debug)
        except gss.KerberosUnavailable as error:
            logger.warning("kerberos provider %s: the KDC could not be asked: %s", self.component.name, error)
            return None
        return self._find_or_import(realm, username) if exists else None

    def get_user_by_email(self, realm, email):
        return None  # a KDC knows no e-mail addresses

    def search(self, realm, query, first=0, max_results=100):
        return []  # a KDC cannot be searched; imported users are found in the realm database

    def _find_or_import(self, realm, username):
        """The realm user of a principal this KDC vouched for: the one imported earlier, or a new
        one. A local user of that name, or one of another provider, is never taken over."""
        username = username.lower()
        principal = self._principal(username)
        user = User.objects.filter(realm=realm, username=username, service_account_client__isnull=True).first()
        if user is not None:
            if user.federation_link_id != self.component.pk:
                logger.warning("kerberos provider %s: user %s already exists and is not linked to it",
                               self.component.name, username)
                return None
            if (user.attributes or {}).get(KERBEROS_PRINCIPAL) not in (None, [principal], principal):
                logger.warning("kerberos provider %s: user %s is linked to principal %s, not %s",
                               self.component.name, username, user.attributes[KERBEROS_PRINCIPAL], principal)
                return None
            return user
        return create_user(realm, username, email=principal.lower(), enabled=True, federation_link=self.component,
                           attributes={KERBEROS_PRINCIPAL: [principal]},
                           required_actions=["UPDATE_PROFILE"] if self.config.update_profile_first_login else [])

    def user_of_principal(self, realm, principal):
        """The realm user of a principal an SPNEGO token proved, or None for another realm's."""
        name, _, kerberos_realm = principal.rpartition("@")
        if kerberos_realm != self.config.kerberos_realm or not name:
            return None
        return self._find_or_import(realm, name)

    # Credentials ----------------------------------------------------------------------------

    def _local_password(self, user):
        return Credential.objects.filter(user=user, type=Credential.PASSWORD).exists()

    def validate(self, realm, user, credential_type, secret):
        if credential_type != Credential.PASSWORD:
            return False
        if self._local_password(user):  # set here in UNSYNCED mode: Keycloak checks it locally
            return storage.REALM_DATABASE.validate(realm, user, credential_type, secret)
        if not self.config.allow_password_authentication or not secret:
            return False
        try:
            return gss.check_password(self._principal(user.username), secret, debug=self.config.debug)
        except gss.KerberosUnavailable as error:
            logger.warning("kerberos provider %s: the KDC could not be asked: %s", self.component.name, error)
            return False

    def is_configured_for(self, realm, user, credential_type):
        return credential_type == Credential.PASSWORD and (
            self.config.allow_password_authentication or self._local_password(user))

    def update_credential(self, realm, user, credential_type, secret):
        if credential_type != Credential.PASSWORD or self.config.edit_mode == READ_ONLY:
            return False  # the password is changed in the Kerberos realm, not here
        assert self.config.edit_mode == UNSYNCED
        return storage.REALM_DATABASE.update_credential(realm, user, credential_type, secret)

    def authenticate_credential(self, realm, credential_type, value):
        """An SPNEGO token (Keycloak's CredentialAuthentication for ``kerberos``)."""
        if credential_type != storage.KERBEROS:
            return None
        return authenticate_spnego(realm, value, self.config, self.component.name, self.user_of_principal)
