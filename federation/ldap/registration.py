"""Plugging LDAP federation into the realm: its storage provider, Admin API routes and signal
receivers (called once from ``FederationConfig.ready()``)."""


def register():
    from django.db.models.signals import post_delete, post_save, pre_save

    from realms import storage
    from realms.api import resources
    from realms.models import Component, User

    from . import api, hooks
    from .config import PROVIDER_ID
    from .provider import provider_for

    storage.register_provider(PROVIDER_ID, provider_for, secret_config=("bindCredential",))
    resources.register(*api.urlpatterns)
    pre_save.connect(hooks.component_saving, sender=Component, dispatch_uid="federation-component-seal")
    post_save.connect(hooks.component_saved, sender=Component, dispatch_uid="federation-component-schedule")
    post_delete.connect(hooks.component_deleted, sender=Component, dispatch_uid="federation-component-unschedule")
    pre_save.connect(hooks.user_saving, sender=User, dispatch_uid="federation-user-write-back")
