"""OpenID Connect's share of the cached realm configuration (``realms.data.realm_cache``).

Per client: its client scopes, protocol mappers (compiled per combination of scopes and token
type), scope roles and service account; per realm: users' effective roles. All of it hangs on
the realm's cached configuration and is dropped with it when anything in the realm changes, so
the token endpoint reads no configuration from the database; see
docs/decisions/0004-oidc-without-dot-models.md.
"""
import re
import threading
from collections import OrderedDict

from realms.data import realm_cache
from realms.models import (
    Client,
    ClientScope,
    ClientScopeLink,
    ProtocolMapper,
    Role,
    User,
    effective_roles,
    effective_roles_in,
    expand_composites,
)

from . import client_metadata
from .mappers import PAIRWISE, SALT, compile_mappers, pairwise_subject, sector_identifier

PROTOCOL = "openid-connect"
USER_ROLES_PER_REALM = 10000
_CSP_SOURCE = re.compile(r"^(?:\*|https?://[A-Za-z0-9.\-\[\]:*]+)$")


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
        # A pairwise mapper of the client or of any of its scopes names the user in every token
        # of the client: a subject that changed with the scopes asked for would break refresh,
        # userinfo and logout hints.
        self.pairwise = next((m.config for m in [*self.client_mappers, *mappers] if m.protocol_mapper == PAIRWISE),
                             None)

    def subject(self, user_id):
        """The ``sub`` this client knows the user by: pairwise when it has such a mapper."""
        if self.pairwise is None:
            return user_id
        sector = sector_identifier(self.pairwise, self.client.root_url, self.client.redirect_uris)
        return pairwise_subject(sector or "", user_id, self.pairwise.get(SALT) or "")

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
    """What the OIDC endpoints read of one realm: the realm row, per-client configuration and
    users' effective roles."""

    def __init__(self, base):
        self.base = base
        self.realm = base.realm
        self._clients = {}
        self._user_roles = OrderedDict()
        self._frame_ancestors = None
        self._lock = threading.Lock()

    def frame_ancestors(self):
        """The web origins of the realm's enabled OpenID Connect clients: who may frame the
        session status pages."""
        if self._frame_ancestors is None:
            clients = Client.objects.filter(realm=self.realm, enabled=True, protocol=PROTOCOL)
            origins = frozenset().union(*(resolve_web_origins(c) for c in clients))
            # They go into a CSP header: anything but a plain origin (or *) could add directives.
            self._frame_ancestors = frozenset(o for o in origins if _CSP_SOURCE.match(o))
        return self._frame_ancestors

    def client(self, client_id) -> ClientConfig | None:
        config = self._clients.get(client_id)
        if config is None:
            client = self.base.client(client_id)
            if client is None:
                return None
            config = ClientConfig(self.realm, client)
            self._clients[client_id] = config
        if not client_metadata.usable(config.client):
            return None  # made from a client id metadata document while that feature is off
        return config

    def user_roles(self, user):
        """The user's effective roles as RoleRefs, cached until something in the realm changes."""
        roles = self._user_roles.get(user.pk)
        if roles is None:
            roles = frozenset(RoleRef(r) for r in effective_roles_in(self.base.roles_by_id(), user))
            with self._lock:
                self._user_roles[user.pk] = roles
                if len(self._user_roles) > USER_ROLES_PER_REALM:
                    self._user_roles.popitem(last=False)
        return roles


def scope_names(realm):
    """The names of the realm's OpenID Connect client scopes, sorted (discovery's
    ``scopes_supported``): read once per process and dropped with the realm's configuration."""
    return realm_cache.stored(realm, "openid-connect-scope-names", lambda realm: tuple(
        ClientScope.objects.filter(realm=realm, protocol=PROTOCOL).order_by("name").values_list("name", flat=True)))


def get_realm(name) -> RealmConfig:
    """The enabled realm's OIDC configuration; 404 for an unknown or disabled realm."""
    return realm_cache.get_realm(name).extension(PROTOCOL, RealmConfig)


def find_realm(name) -> RealmConfig | None:
    """The enabled realm's OIDC configuration; None for an unknown or disabled realm."""
    config = realm_cache.find_realm(name)
    return config.extension(PROTOCOL, RealmConfig) if config is not None else None
