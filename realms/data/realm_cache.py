"""Realm configuration cached per process, for every protocol.

Sign-ins and token requests read the realm row and a client row on every request, and protocols
derive more from them (OIDC: client scopes, compiled mapper chains, roles). All of it is loaded
once per process and kept in memory. Any change to a row of the realm's configuration (realm,
clients, client scopes and their links, protocol mappers, roles, groups, role and group
assignments, service-account users, authentication flows and required actions) bumps the realm's
generation: this process drops its copy at once (signal handlers), and other processes see the
new generation in the shared Django cache
(Redis in production) within a second (``realms.data.shared_cache``). That bounded staleness is the price of
sign-ins and token requests that do not read configuration from the database; see
docs/decisions/0004-oidc-without-dot-models.md and docs/decisions/0011-sign-in-cpu-budget.md.
"""
import functools
import threading

from django.conf import settings
from django.db.models.signals import m2m_changed, post_delete, post_save
from django.http import Http404

from ..models import (
    AuthenticationExecution,
    AuthenticationFlow,
    AuthenticatorConfig,
    Client,
    ClientScope,
    ClientScopeLink,
    Group,
    IdentityProvider,
    IdentityProviderMapper,
    OrganizationIdentityProvider,
    ProtocolMapper,
    Realm,
    RealmDefaultClientScope,
    RequiredActionProvider,
    Role,
    User,
    effective_roles_in,
    roles_by_id,
)
from .shared_cache import LocalCopies


class RealmConfig:
    """One realm's cached configuration: the realm row, its client rows (read on first use, with
    ``client.realm`` set to the cached realm) and what protocols derive from them."""

    def __init__(self, realm):
        self.realm = realm
        self._clients = {}  # clientId -> Client
        self._clients_by_pk = {}
        self._extensions = {}
        self._dropped = False
        self._lock = threading.RLock()  # a factory that loads other realms may drop this one (drop)

    def _keep(self, client):
        with self._lock:
            # Two threads may read the same row; all callers then share the first copy kept.
            client = self._clients.setdefault(client.client_id, client)
            self._clients_by_pk[client.pk] = client
        client.realm = self.realm
        return client

    def client(self, client_id) -> Client | None:
        """The realm's client with this clientId (enabled or not), or None."""
        client = self._clients.get(client_id)
        if client is None:
            if "\x00" in client_id:
                return None  # decoded from Basic credentials or a JWT; no stored id has one (PostgreSQL)
            client = Client.objects.filter(realm=self.realm, client_id=client_id).first()
            if client is None:
                return None
            client = self._keep(client)
        return client

    def client_by_pk(self, pk) -> Client | None:
        """The realm's client with this id (enabled or not), or None."""
        client = self._clients_by_pk.get(pk)
        if client is None:
            client = Client.objects.filter(realm=self.realm, pk=pk).first()
            if client is None:
                return None
            client = self._keep(client)
        return client

    def roles_by_id(self):
        """{role id: role, its client loaded} of every role of the realm."""
        return self.extension("roles-by-id", lambda config: roles_by_id(config.realm))

    def extension(self, name, factory):
        """A protocol's own state derived from this configuration: ``factory(self)`` on first
        use, dropped with the configuration when the realm changes."""
        extension = self._extensions.get(name)
        if extension is None:
            with self._lock:
                extension = self._extensions.get(name)
                if extension is None:
                    extension = factory(self)
                    if not self._dropped:  # a request still holding a dropped copy keeps nothing in it
                        self._extensions[name] = extension
        return extension

    def drop(self):
        """Let go of the extensions when the cache lets this configuration go: OIDC's refers back
        to it, and that cycle would keep a dropped realm in memory until the next full collection
        of the cycle collector; without it the realm is freed at once (decision 0107)."""
        with self._lock:
            self._dropped = True
            self._extensions.clear()
        # Its name goes with it, so that ``_ids`` holds no more realms than the cache, and none deleted.
        if _ids.get(self.realm.name) == self.realm.pk:
            _ids.pop(self.realm.name, None)


def _load(realm_id):
    realm = Realm.objects.filter(pk=realm_id).first()
    return RealmConfig(realm) if realm is not None else None


def max_realms():
    """The realms whose configuration (and keys, ``realms.data.keys``) a process keeps: a worker
    serving a thousand realms keeps those it served last, a realm dropped is read again on its
    next request (decision 0107)."""
    return settings.IDP_CACHE_EMBEDDED_REALMS_MAX_COUNT


_configs = LocalCopies("realm-config", _load, max_entries=max_realms, dropped=RealmConfig.drop)
_ids = {}  # realm name -> realm id of the configurations kept in this process (RealmConfig.drop)


def find_realm(name) -> RealmConfig | None:
    """The enabled realm's cached configuration; None for an unknown or disabled realm."""
    realm_id = _ids.get(name)
    config = _configs.get(realm_id) if realm_id is not None else None
    if config is None or config.realm.name != name:  # unknown here, dropped, deleted or renamed
        realm_id = Realm.objects.filter(name=name).values_list("pk", flat=True).first()
        config = _configs.get(realm_id) if realm_id is not None else None
        if config is None:
            return None
    _ids[name] = realm_id  # again: a copy reloaded above took its name along when it was let go
    return config if config.realm.enabled else None


def get_realm(name) -> RealmConfig:
    """The enabled realm's cached configuration; 404 for an unknown or disabled realm."""
    config = find_realm(name)
    if config is None:
        raise Http404("Realm does not exist")
    return config


def stored(realm, name, factory):
    """``factory(realm)`` computed once per realm and process from the realm's stored
    configuration (its flows, its required actions), dropped when the realm changes; ``{}``
    for a realm that no longer exists."""
    config = _configs.get(realm.pk)
    return config.extension(name, lambda c: factory(c.realm)) if config is not None else {}


def effective_roles(user):
    """``models.effective_roles(user)`` for a request: which roles the user holds is read now (a
    role taken away a moment ago no longer counts), the role rows come from the realm's cached
    configuration (the ORM's compiler and the rows it builds cost more than the query)."""
    config = _configs.get(user.realm_id)
    return effective_roles_in(config.roles_by_id() if config is not None else {}, user)


class GroupTree:
    """The realm's groups, read in one query once per realm configuration: ``paths`` {group id:
    its path, Keycloak's "/parent/child"} and ``children`` {group id, None for the top level:
    [child ids]} (``Group.path`` reads a parent per level)."""

    def __init__(self, rows):
        """``rows``: {group id: (parent id, name)}."""
        self.paths, self.children = {}, {}

        def path(pk):
            if pk not in self.paths:
                parent, name = rows[pk]
                self.paths[pk] = (path(parent) if parent in rows else "") + "/" + name
            return self.paths[pk]
        for pk, (parent, _) in rows.items():
            path(pk)
            self.children.setdefault(parent, []).append(pk)

    @functools.cached_property
    def ids(self):
        """{path: group id}: for configurations that name groups by path (Authorization Services'
        group policy); built on first use."""
        return {path: pk for pk, path in self.paths.items()}

    def descendants(self, group_id):
        """The ids of the group's children, their children and so on."""
        found, frontier = set(), [group_id]
        while frontier:
            frontier = [child for pk in frontier for child in self.children.get(pk, ())]
            found.update(frontier)
        return found


_NO_GROUPS = GroupTree({})


def group_tree(realm) -> GroupTree:
    """The realm's ``GroupTree``, kept with its configuration: every group change drops it."""
    return stored(realm, "group-tree", lambda r: GroupTree({
        pk: (parent, name) for pk, parent, name in Group.objects.filter(realm=r).values_list(
            "pk", "parent_id", "name")})) or _NO_GROUPS


def clear():
    """Forget every realm's configuration in this process (other processes keep theirs until
    a generation changes). For tests that re-create a realm under the same name."""
    _ids.clear()
    _configs.clear()


def changed(realm_id):
    """Drop the realm's configuration here and in every process: for writes that send no
    signals (``realms.data.rows.insert_many``)."""
    _configs.invalidate(realm_id)


def _realm_id_of(instance):
    if isinstance(instance, Realm):
        return instance.pk
    if isinstance(instance, ProtocolMapper):
        owner = instance.client or instance.client_scope
        return owner.realm_id if owner else None
    if isinstance(instance, ClientScopeLink):
        return instance.client_scope.realm_id
    if isinstance(instance, OrganizationIdentityProvider):
        return instance.organization.realm_id
    return getattr(instance, "realm_id", None)


def _changed(sender, instance, **kwargs):
    if kwargs.get("raw"):
        return
    try:
        realm_id = _realm_id_of(instance)
    except (Client.DoesNotExist, ClientScope.DoesNotExist, OrganizationIdentityProvider.organization.RelatedObjectDoesNotExist):
        realm_id = None
    if realm_id is None:
        # The owner is already gone (cascade); drop every realm in this process.
        clear()
        return
    changed(realm_id)


def _m2m_changed(sender, instance, action, **kwargs):
    if action.startswith("post_"):
        _changed(sender, instance)


def _user_changed(sender, instance, **kwargs):
    # Only service accounts are cached as users (OIDC's client credentials); other users' rows
    # are read with their session.
    if instance.service_account_client_id and not kwargs.get("raw"):
        _changed(sender, instance)


def connect_signals():
    """Drop a realm's configuration when a row of it changes; called from ``RealmsConfig.ready``."""
    for model in (Realm, Client, ClientScope, ClientScopeLink, RealmDefaultClientScope, ProtocolMapper, Role, Group,
                  AuthenticationFlow, AuthenticationExecution, AuthenticatorConfig, RequiredActionProvider,
                  IdentityProvider, IdentityProviderMapper, OrganizationIdentityProvider):
        post_save.connect(_changed, sender=model, dispatch_uid=f"realm-cache-save-{model.__name__}")
        post_delete.connect(_changed, sender=model, dispatch_uid=f"realm-cache-delete-{model.__name__}")
    for through in (User.roles.through, User.groups.through, Group.roles.through, Role.composites.through,
                    Client.scope_roles.through, ClientScope.scope_roles.through):
        m2m_changed.connect(_m2m_changed, sender=through, dispatch_uid=f"realm-cache-m2m-{through.__name__}")
    post_save.connect(_user_changed, sender=User, dispatch_uid="realm-cache-user-save")
    post_delete.connect(_user_changed, sender=User, dispatch_uid="realm-cache-user-delete")
