"""What LDAP federation does when components and users are saved, for every writer (the Admin
API, the realm import, registration, the console): secret config sealed, sync schedules kept in
step, new users created in a writable directory with sync registrations on, changes of federated
users written back (WRITABLE) or refused (READ_ONLY), and their group and role memberships
written to the directory or refused as the group and role mappers' modes say. A refusal is
``realms.errors.StoreRefused``, which every surface answers in its own shape (never a 500)."""
import ldap

from realms.data import realm_cache
from realms.errors import ReadOnlyUser, StoreRefused
from realms.models import Component, Group, Role, User
from realms.users import storage

from . import membership, schedule
from .config import PROVIDER_ID, READ_ONLY, LdapConfig
from .connection import DirectoryUnavailable, refusal


def component_saving(sender, instance, **kwargs):
    storage.seal_config(instance)


def _ldap_components(realm_id):
    return Component.objects.filter(realm_id=realm_id, provider_type=Component.USER_STORAGE, provider_id=PROVIDER_ID)


def _has_ldap(realm):
    """Whether the realm has LDAP providers: every new user asks (an Admin API create, a
    registration), and most realms have none. Kept with the realm's cached configuration, so it
    goes with the realm when the realm is deleted or let go past the cap (decision 0107)."""
    return realm_cache.stored(realm, "ldap-providers", lambda realm: _ldap_components(realm.pk).exists())


def component_saved(sender, instance, created=False, **kwargs):
    if instance.provider_type == Component.USER_STORAGE and instance.provider_id == PROVIDER_ID:
        if created:  # only a provider made or deleted changes the answer; a sync saves its own row
            realm_cache.changed(instance.realm_id)
        schedule.update(instance)


def component_deleted(sender, instance, **kwargs):
    if instance.provider_type == Component.USER_STORAGE and instance.provider_id == PROVIDER_ID:
        realm_cache.changed(instance.realm_id)
        schedule.remove(instance)


def _registering_provider(realm):
    if not _has_ldap(realm):
        return None
    for component in _ldap_components(realm.pk).order_by("name"):
        provider = storage.provider_for(component)
        if provider is not None and provider.writable and provider.config.sync_registrations:
            return provider
    return None


def user_saving(sender, instance, raw=False, **kwargs):
    if raw or instance.service_account_client_id:
        return
    if instance.federation_link_id is None:
        if instance._state.adding:
            provider = _registering_provider(instance.realm)
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
        raise ReadOnlyUser()


def _ldap_provider(user):
    try:
        provider = storage.provider_of(user)
    except storage.Unavailable:
        return None
    return provider if isinstance(getattr(provider, "config", None), LdapConfig) else None


def _membership_changing(kind, instance, action, reverse, pk_set):
    """A user joins or leaves groups (gets or loses roles) here, by any writer: the group and
    role mappers of the user's LDAP provider write the directory (LDAP_ONLY) or refuse (READ_ONLY)."""
    if action not in ("pre_add", "pre_remove", "pre_clear"):
        return
    target_model = Group if kind == "groups" else Role
    if reverse:  # group.members / role.users: ``instance`` is the group or role
        if action == "pre_clear":
            users = list(getattr(instance, "members" if kind == "groups" else "users")
                         .filter(federation_link__isnull=False))
        else:
            users = list(User.objects.filter(pk__in=pk_set or (), federation_link__isnull=False))
        pairs = [(u, instance) for u in users]
    else:
        if instance.federation_link_id is None:
            return
        targets = (list(getattr(instance, kind).all()) if action == "pre_clear"
                   else list(target_model.objects.filter(pk__in=pk_set or ())))
        pairs = [(instance, t) for t in targets]
    for user, target in pairs:
        provider = _ldap_provider(user)
        if provider is None:
            continue
        for m in provider.mappers:
            if not isinstance(m, membership.Membership) or m.kind != kind or not m.base:
                continue
            try:
                if action == "pre_add":
                    m.joining(provider.directory, user.realm, user, target)
                else:
                    m.leaving(provider.directory, user.realm, user, target)
            except membership.MembershipError as exc:
                raise StoreRefused(str(exc)) from None
            except DirectoryUnavailable:
                raise storage.Unavailable(provider.component.pk) from None
            except ldap.LDAPError as exc:
                raise refusal(None, exc) from None


def groups_changing(sender, instance, action, reverse, model, pk_set, **kwargs):
    _membership_changing("groups", instance, action, reverse, pk_set)


def roles_changing(sender, instance, action, reverse, model, pk_set, **kwargs):
    _membership_changing("roles", instance, action, reverse, pk_set)
