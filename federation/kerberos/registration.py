"""Registers the SPNEGO step and the Kerberos provider (FederationConfig.ready), and switches the
realm's SPNEGO step on and off with the providers that take Kerberos tickets (a ``kerberos``
provider, an ``ldap`` one with ``allowKerberosAuthentication``), as Keycloak's provider factories
do (created or switched to take tickets: DISABLED becomes ALTERNATIVE; removed or switched off:
back to DISABLED, here once no such provider is left)."""
import logging

from django.conf import settings
from django.db.models.signals import post_delete, post_save, pre_save

from realms.models import AuthenticationExecution, Component
from realms.signin import flows
from realms.users import storage

from ..ldap.config import PROVIDER_ID as LDAP
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
        # An optional extra: a developer need not hear of it at every start; a production server
        # says so at start, for an operator whose realms hold Kerberos providers.
        logger.log(logging.DEBUG if settings.IDP_DEV_MODE else logging.INFO,
                   "kerberos user federation is not available on this server: %s", error)
        return
    storage.register_provider(PROVIDER_ID, KerberosProvider, validate=validate)
    from ..models import KerberosComponent, LdapComponent

    for model in (Component, LdapComponent, KerberosComponent):  # a proxy's saves are signalled under its own name
        uid = model.__name__
        pre_save.connect(_provider_saving, sender=model, dispatch_uid=f"kerberos-spnego-before-{uid}")
        post_save.connect(_provider_saved, sender=model, dispatch_uid=f"kerberos-spnego-on-{uid}")
        post_delete.connect(_provider_deleted, sender=model, dispatch_uid=f"kerberos-spnego-off-{uid}")


def _takes_tickets(component):
    return component.provider_type == Component.USER_STORAGE and (
        component.provider_id == PROVIDER_ID or (component.provider_id == LDAP and component.get(
            "allowKerberosAuthentication", "false").lower() == "true"))


def _spnego_steps(realm_id, requirement):
    return AuthenticationExecution.objects.filter(realm_id=realm_id, authenticator=SpnegoAuthenticator.provider_id,
                                                  requirement=requirement)


def _switch(realm_id, old, new):
    for execution in _spnego_steps(realm_id, old):
        execution.requirement = new
        execution.save()  # through save: the realm's cached flows are dropped


def _provider_saving(sender, instance, **kwargs):
    if instance.provider_id not in (PROVIDER_ID, LDAP):
        return
    before = None if instance._state.adding else Component.objects.filter(pk=instance.pk).first()
    instance._took_tickets = before is not None and _takes_tickets(before)


def _provider_saved(sender, instance, **kwargs):
    took, takes = getattr(instance, "_took_tickets", False), _takes_tickets(instance)
    if takes and not took:
        _switch(instance.realm_id, flows.DISABLED, flows.ALTERNATIVE)
    elif took and not takes:
        _provider_deleted(sender, instance)


def _provider_deleted(sender, instance, **kwargs):
    if _takes_tickets(instance) or getattr(instance, "_took_tickets", False):
        others = Component.objects.filter(realm_id=instance.realm_id, provider_type=Component.USER_STORAGE,
                                          provider_id__in=(PROVIDER_ID, LDAP)).exclude(pk=instance.pk)
        if not any(_takes_tickets(c) for c in others):
            _switch(instance.realm_id, flows.ALTERNATIVE, flows.DISABLED)
