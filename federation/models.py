"""The console's views of federation components: proxies of ``realms.models.Component`` (no table
of their own) for LDAP providers, their mappers and Kerberos providers, and the status of each
LDAP provider's last synchronization (``SyncStatus``, shown on its page)."""
from django.db import models

from realms.models import Component

from .ldap.config import MAPPER_TYPE


class LdapComponentManager(models.Manager):
    def get_queryset(self):
        return super().get_queryset().filter(provider_type=Component.USER_STORAGE, provider_id="ldap")


class LdapComponent(Component):
    objects = LdapComponentManager()

    class Meta:
        proxy = True
        verbose_name = "LDAP provider"
        verbose_name_plural = "LDAP providers"


class LdapMapperManager(models.Manager):
    def get_queryset(self):
        return super().get_queryset().filter(provider_type=MAPPER_TYPE)


class LdapMapper(Component):
    """A mapper of an LDAP provider (``parent_id`` the provider's id)."""

    objects = LdapMapperManager()

    class Meta:
        proxy = True
        verbose_name = "LDAP mapper"
        verbose_name_plural = "LDAP mappers"


class KerberosComponentManager(models.Manager):
    def get_queryset(self):
        return super().get_queryset().filter(provider_type=Component.USER_STORAGE, provider_id="kerberos")


class KerberosComponent(Component):
    objects = KerberosComponentManager()

    class Meta:
        proxy = True
        verbose_name = "Kerberos provider"
        verbose_name_plural = "Kerberos providers"


class SyncStatus(models.Model):
    """The last synchronization of an LDAP provider asked for from the console or run by the
    schedule: queued, running, done (with Keycloak's result counts) or failed (with why)."""

    QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"

    component = models.OneToOneField(Component, on_delete=models.CASCADE, primary_key=True,
                                     related_name="+")
    changed_only = models.BooleanField(default=False)
    state = models.CharField(max_length=16, default=QUEUED)
    requested = models.DateTimeField()
    started = models.DateTimeField(null=True)
    finished = models.DateTimeField(null=True)
    ignored = models.BooleanField(default=False)  # import off, or another run of this provider under way
    added = models.IntegerField(default=0)
    updated = models.IntegerField(default=0)
    removed = models.IntegerField(default=0)
    failed = models.IntegerField(default=0)
    error = models.TextField(blank=True)
