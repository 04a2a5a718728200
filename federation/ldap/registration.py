"""Plugging LDAP federation into the realm: its storage provider, Admin API routes and signal
receivers (called once from ``FederationConfig.ready()``)."""


def register():
    from django.db.models.signals import m2m_changed, post_delete, post_save, pre_save

    from realms.admin_api import resources
    from realms.models import Component, User
    from realms.users import storage

    from ..models import LdapComponent
    from . import api, hooks, mappers
    from .config import PROVIDER_ID, ConfigError
    from .provider import provider_for

    storage.register_provider(PROVIDER_ID, provider_for, secret_config=("bindCredential",))
    for mapper_id in ("group-ldap-mapper", "role-ldap-mapper"):
        def validate(config, parent_config, mapper_id=mapper_id):
            try:
                mappers.validate(mapper_id, config, parent_config)
            except ConfigError as exc:
                raise storage.InvalidConfig(str(exc)) from None

        storage.register_validator(mapper_id, validate)
    resources.register(*api.urlpatterns)
    for model in (Component, LdapComponent):  # a proxy's saves are signalled under its own name
        uid = model.__name__
        pre_save.connect(hooks.component_saving, sender=model, dispatch_uid=f"federation-seal-{uid}")
        post_save.connect(hooks.component_saved, sender=model, dispatch_uid=f"federation-schedule-{uid}")
        post_delete.connect(hooks.component_deleted, sender=model, dispatch_uid=f"federation-unschedule-{uid}")
    pre_save.connect(hooks.user_saving, sender=User, dispatch_uid="federation-user-write-back")
    m2m_changed.connect(hooks.groups_changing, sender=User.groups.through, dispatch_uid="federation-ldap-groups")
    m2m_changed.connect(hooks.roles_changing, sender=User.roles.through, dispatch_uid="federation-ldap-roles")
