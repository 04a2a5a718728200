"""Registers the SPNEGO step and the Kerberos provider (FederationConfig.ready), and switches the
realm's SPNEGO step on and off with its Kerberos providers, as Keycloak's provider factory does
(onCreate: DISABLED becomes ALTERNATIVE; preRemove: back to DISABLED, here once no Kerberos
provider is left)."""
import logging

from django.db.models.signals import post_delete, post_save

from realms import flows, storage
from realms.models import AuthenticationExecution, Component

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
    post_save.connect(_provider_saved, sender=Component, dispatch_uid="kerberos-spnego-on")
    post_delete.connect(_provider_deleted, sender=Component, dispatch_uid="kerberos-spnego-off")


def _spnego_steps(realm_id, requirement):
    return AuthenticationExecution.objects.filter(realm_id=realm_id, authenticator=SpnegoAuthenticator.provider_id,
                                                  requirement=requirement)


def _switch(realm_id, old, new):
    for execution in _spnego_steps(realm_id, old):
        execution.requirement = new
        execution.save()  # through save: the realm's cached flows are dropped


def _provider_saved(sender, instance, created, **kwargs):
    if created and instance.provider_id == PROVIDER_ID:
        _switch(instance.realm_id, flows.DISABLED, flows.ALTERNATIVE)


def _provider_deleted(sender, instance, **kwargs):
    if instance.provider_id == PROVIDER_ID and not Component.objects.filter(
            realm_id=instance.realm_id, provider_id=PROVIDER_ID).exists():
        _switch(instance.realm_id, flows.ALTERNATIVE, flows.DISABLED)
