"""Per-realm configuration the token path reads on every request, cached per process.

The realm row, its clients with their client scopes, protocol mappers and scope roles, the
service-account users and users' effective roles are loaded once and kept in memory. Any change
to one of those rows bumps the realm's generation: this process drops its copy at once (signal
handlers), and other processes see the new generation in the shared Django cache (Redis in
production) within ``GENERATION_CHECK_SECONDS``. That bounded staleness is the price of a token
endpoint that does not touch the database for configuration; see
docs/decisions/0004-oidc-without-dot-models.md.
"""
import threading
import time
from collections import OrderedDict

from django.core.cache import cache
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save
from django.http import Http404

from realms.models import (Client, ClientScope, ClientScopeLink, Group, ProtocolMapper, Realm,
                           RealmDefaultClientScope, Role, User)
from realms.roles import effective_roles, expand_composites

from .mappers import compile_mappers

GENERATION_CHECK_SECONDS = 1.0
USER_ROLES_PER_REALM = 10000

_lock = threading.Lock()
_by_name = {}  # realm name -> RealmConfig


def _gen_key(realm_id):
    return f"oidc:realm-gen:{realm_id}"


class RoleRef:
    """What a token needs of a role: its id, name and the clientId of its client (None: realm)."""

    __slots__ = ("id", "name", "client_id")

    def __init__(self, role):
        self.id = role.pk
        self.name = role.name
        self.client_id = role.client.client_id if role.client_id else None


class ClientConfig:
    """A client with everything the token endpoint reads of it."""

    def __init__(self, realm, client):
        self.realm = realm
        self.client = client
        self.client_id = client.client_id
        links = list(ClientScopeLink.objects.filter(client=client, client_scope__protocol="openid-connect")
                     .select_related("client_scope").order_by("client_scope__name"))
        self.default_scopes = [link.client_scope for link in links if link.default]
        self.optional_scopes = {link.client_scope.name: link.client_scope for link in links if not link.default}
        scope_ids = [s.pk for s in self.default_scopes] + [s.pk for s in self.optional_scopes.values()]
        mappers = list(ProtocolMapper.objects.filter(protocol="openid-connect", client_scope_id__in=scope_ids))
        self.scope_mappers = {}
        for mapper in mappers:
            self.scope_mappers.setdefault(mapper.client_scope_id, []).append(mapper)
        self.client_mappers = list(ProtocolMapper.objects.filter(protocol="openid-connect", client=client))
        # Scope roles, unexpanded, of the client itself and of each of its scopes; composites are
        # expanded per combination of scopes on first use.
        self.own_scope_role_ids = set(client.scope_roles.values_list("pk", flat=True))
        self.own_role_ids = set(Role.objects.filter(client=client).values_list("pk", flat=True))
        self.scope_role_ids = {}
        for scope_id, role_id in ClientScope.scope_roles.through.objects.filter(
                clientscope_id__in=scope_ids).values_list("clientscope_id", "role_id"):
            self.scope_role_ids.setdefault(scope_id, set()).add(role_id)
        self._allowed_roles = {}
        self._mapper_chains = {}
        self._service_account = None
        self.web_origins = resolve_web_origins(client)

    def allowed_role_ids(self, scopes):
        """Role ids the client may put in a token given the client scopes in effect (Keycloak's
        TokenManager.getAccess): its own roles, its and the scopes' scope roles, composites
        expanded. None means full scope."""
        if self.client.full_scope_allowed:
            return None
        key = frozenset(s.pk for s in scopes)
        allowed = self._allowed_roles.get(key)
        if allowed is None:
            ids = set(self.own_role_ids) | self.own_scope_role_ids
            for scope in scopes:
                ids |= self.scope_role_ids.get(scope.pk, set())
            allowed = frozenset(r.pk for r in expand_composites(list(Role.objects.filter(pk__in=ids))))
            self._allowed_roles[key] = allowed
        return allowed

    def mappers_for(self, scopes, token_type):
        """The compiled mapper chain for these scopes and this token type (cached)."""
        key = (frozenset(s.pk for s in scopes), token_type)
        chain = self._mapper_chains.get(key)
        if chain is None:
            mappers = []
            for scope in scopes:
                mappers.extend(self.scope_mappers.get(scope.pk, ()))
            mappers.extend(self.client_mappers)
            chain = self._mapper_chains[key] = compile_mappers(mappers, token_type)
        return chain

    def service_account(self):
        """(user, roles) of the client's service account, or None."""
        if self._service_account is None:
            user = User.objects.filter(service_account_client=self.client).first()
            self._service_account = (user, frozenset(RoleRef(r) for r in effective_roles(user))) if user else False
        return self._service_account or None


def resolve_web_origins(client):
    """Allowed CORS origins: registered web origins, ``+`` = the redirect URIs' origins,
    ``*`` = any."""
    from urllib.parse import urlsplit

    origins = set()
    for origin in client.web_origins or []:
        if origin == "+":
            for uri in client.redirect_uris or []:
                parts = urlsplit(uri)
                if parts.scheme in ("http", "https") and parts.netloc and "*" not in parts.netloc:
                    origins.add(f"{parts.scheme}://{parts.netloc}")
        elif origin:
            origins.add(origin.rstrip("/"))
    return frozenset(origins)


class RealmConfig:
    def __init__(self, realm, generation):
        self.realm = realm
        self.generation = generation
        self.checked = time.monotonic()
        self._clients = {}
        self._user_roles = OrderedDict()
        self._lock = threading.Lock()

    def client(self, client_id) -> ClientConfig | None:
        config = self._clients.get(client_id)
        if config is None:
            client = Client.objects.filter(realm=self.realm, client_id=client_id).first()
            if client is None:
                return None
            config = ClientConfig(self.realm, client)
            self._clients[client_id] = config
        return config

    def user_roles(self, user):
        """The user's effective roles as RoleRefs, cached until something in the realm changes."""
        roles = self._user_roles.get(user.pk)
        if roles is None:
            roles = frozenset(RoleRef(r) for r in effective_roles(user))
            with self._lock:
                self._user_roles[user.pk] = roles
                if len(self._user_roles) > USER_ROLES_PER_REALM:
                    self._user_roles.popitem(last=False)
        return roles


def get_realm(name) -> RealmConfig:
    """The enabled realm's cached configuration; 404 for an unknown or disabled realm."""
    config = _by_name.get(name)
    now = time.monotonic()
    if config is not None:
        if now - config.checked < GENERATION_CHECK_SECONDS:
            return config
        if cache.get(_gen_key(config.realm.pk), 0) == config.generation:
            config.checked = now
            return config
    realm = Realm.objects.filter(name=name).first()
    if realm is None or not realm.enabled:
        raise Http404("Realm does not exist")
    config = RealmConfig(realm, cache.get(_gen_key(realm.pk), 0))
    with _lock:
        _by_name[name] = config
    return config


def clear():
    """Forget every realm's configuration in this process (other processes keep theirs until
    a generation changes). For tests that re-create a realm under the same name."""
    with _lock:
        _by_name.clear()


def invalidate(realm_id):
    with _lock:
        for name, config in list(_by_name.items()):
            if config.realm.pk == realm_id:
                del _by_name[name]
    key = _gen_key(realm_id)
    try:
        cache.incr(key)
    except ValueError:
        cache.add(key, 1, timeout=None) or cache.incr(key)


def _realm_id_of(instance):
    if isinstance(instance, Realm):
        return instance.pk
    if isinstance(instance, ProtocolMapper):
        owner = instance.client or instance.client_scope
        return owner.realm_id if owner else None
    if isinstance(instance, ClientScopeLink):
        return instance.client_scope.realm_id
    return getattr(instance, "realm_id", None)


def _changed(sender, instance, **kwargs):
    if kwargs.get("raw"):
        return
    try:
        realm_id = _realm_id_of(instance)
    except (Client.DoesNotExist, ClientScope.DoesNotExist):
        realm_id = None
    if realm_id is None:
        # The owner is already gone (cascade); drop every realm in this process.
        clear()
        return
    invalidate(realm_id)
    transaction.on_commit(lambda: invalidate(realm_id))


def _m2m_changed(sender, instance, action, **kwargs):
    if action.startswith("post_"):
        _changed(sender, instance)


for _model in (Realm, Client, ClientScope, ClientScopeLink, RealmDefaultClientScope, ProtocolMapper, Role, Group):
    post_save.connect(_changed, sender=_model, dispatch_uid=f"oidc-cache-save-{_model.__name__}")
    post_delete.connect(_changed, sender=_model, dispatch_uid=f"oidc-cache-delete-{_model.__name__}")
for _through in (User.roles.through, User.groups.through, Group.roles.through, Role.composites.through,
                 Client.scope_roles.through, ClientScope.scope_roles.through):
    m2m_changed.connect(_m2m_changed, sender=_through, dispatch_uid=f"oidc-cache-m2m-{_through.__name__}")


def _user_changed(sender, instance, **kwargs):
    # Only service accounts are cached as users; other users' rows are read with their session.
    if instance.service_account_client_id and not kwargs.get("raw"):
        _changed(sender, instance)


post_save.connect(_user_changed, sender=User, dispatch_uid="oidc-cache-user-save")
post_delete.connect(_user_changed, sender=User, dispatch_uid="oidc-cache-user-delete")
