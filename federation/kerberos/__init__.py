"""Kerberos user federation (Keycloak's ``kerberos`` user storage provider) and SPNEGO sign-in.

The provider needs MIT Kerberos's GSS-API through python-gssapi (the ``kerberos`` extra, built
against ``libkrb5-dev``). Without it the provider is not registered: components of this type are
kept, and their users are refused at sign-in until it is installed (``realms.storage``)."""
import logging

logger = logging.getLogger("idp.federation.kerberos")

PROVIDER_ID = "kerberos"


def register():
    from realms import flows, storage

    from .spnego import SpnegoAuthenticator

    # The browser step works with any provider that accepts SPNEGO tokens (LDAP's Kerberos
    # integration too), so it is registered even where this provider cannot be.
    flows.register_authenticator(SpnegoAuthenticator)
    try:
        from .provider import KerberosProvider
    except ImportError as error:  # python-gssapi or MIT Kerberos's library is missing
        logger.info("kerberos user federation is not available: %s", error)
        return
    from .config import validate

    storage.register_provider(PROVIDER_ID, KerberosProvider, validate=validate)
