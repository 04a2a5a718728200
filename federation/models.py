"""The console's view of LDAP providers: a proxy of ``realms.models.Component`` (no table of
its own) limited to user storage components of provider ``ldap``."""
from django.db import models

from realms.models import Component


class LdapComponentManager(models.Manager):
    def get_queryset(self):
        return super().get_queryset().filter(provider_type=Component.USER_STORAGE, provider_id="ldap")


class LdapComponent(Component):
    objects = LdapComponentManager()

    class Meta:
        proxy = True
        verbose_name = "LDAP provider"
        verbose_name_plural = "LDAP providers"
