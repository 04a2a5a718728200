"""Registers the SPNEGO step and the Kerberos provider (FederationConfig.ready)."""
import logging

from realms import flows, storage

from .config import validate
from .spnego import SpnegoAuthenticator

logger = logging.getLogger("idp.federation.kerberos")

PROVIDER_ID = "kerberos"


def register():
    # The browser step works with any provider that accepts SPNEGO tokens (LDAP's Kerberos
    # integration too), so it is registered even where this provider cannot be.
    flows.register_authenticator(SpnegoAuthenticator)
    try:
        from .provider import KerberosProvider  # needs python-gssapi and MIT Kerberos's library
    except ImportError as error:
        logger.info("kerberos user federation is not available on this server: %s", error)
        return
    storage.register_provider(PROVIDER_ID, KerberosProvider, validate=validate)
