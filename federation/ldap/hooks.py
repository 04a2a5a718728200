"""What LDAP federation does when components and users are saved, for every writer (the Admin
API, the realm import, registration, the console): secret config sealed, sync schedules kept in
step, new users created in a writable directory with sync registrations on, changes of federated
users written back (WRITABLE) or refused (READ_ONLY)."""
from realms import storage
from realms.api import errors
from realms.models import Component, User

from . import schedule
from .config import PROVIDER_ID, READ_ONLY, LdapConfig


def component_saving(sender, instance, **kwargs):
    storage.seal_config(instance)


def component_saved(sender, instance, **kwargs):
    if instance.provider_type == Component.USER_STORAGE and instance.provider_id == PROVIDER_ID:
        schedule.update(instance)


def component_deleted(sender, instance, **kwargs):
    if instance.provider_type == Component.USER_STORAGE and instance.provider_id == PROVIDER_ID:
        schedule.remove(instance)


def _registering_provider(realm_id):
    for component in Component.objects.filter(realm_id=realm_id, provider_type=Component.USER_STORAGE,
                                              provider_id=PROVIDER_ID).order_by("name"):
        provider = storage.provider_for(component)
        if provider is not None and provider.writable and provider.config.sync_registrations:
            return provider
    return None


def user_saving(sender, instance, raw=False, **kwargs):
    if raw or instance.service_account_client_id:
        return
    if instance.federation_link_id is None:
        if instance._state.adding:
            provider = _registering_provider(instance.realm_id)
            if provider is not None:
                provider.register(instance.realm, instance)
        return
    before = User.objects.filter(pk=instance.pk).first() if not instance._state.adding else None
    if before is None:
        return
    try:
        provider = storage.provider_of(instance)
    except storage.Unavailable:
        return
    if getattr(provider, "config", None) is None or not isinstance(provider.config, LdapConfig):
        return
    if provider.writable:
        provider.write_back(instance, before)
    elif provider.config.edit_mode == READ_ONLY and provider.changes_directory_fields(instance, before):
        # Keycloak's ReadOnlyException; the Admin API answers it as a 400.
        raise errors.Invalid("User is read only!")
