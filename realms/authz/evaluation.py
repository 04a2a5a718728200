"""Which permissions an identity holds on a resource server, as Keycloak 26 decides them
(DefaultPolicyEvaluator and DecisionPermissionCollector).

A request is a resource and the scopes asked for (all of the resource's when none). The
permissions that apply to it are the resource permissions naming the resource or its type
(``defaultResourceType``) and the scope permissions naming one of the scopes (for that resource,
or for any resource when they name none). Each permission is granted when its policies, combined
by its own decision strategy, grant (a permission without policies grants nothing). The
resource server's decision strategy then combines the permissions, scope by scope:

- UNANIMOUS: a scope any applying permission denies is not granted;
- AFFIRMATIVE: a scope one applying permission grants is granted;
- CONSENSUS: a scope is granted when more applying permissions grant it than deny it.

The enforcement mode: ENFORCING denies what no permission covers, PERMISSIVE grants it,
DISABLED grants everything. The owner of a user-managed resource is granted it all, and the
users its owner shared it with (granted permission tickets) the scopes shared.
"""
import re
from dataclasses import dataclass, field

from ..data import realm_cache
from .policies import combine, config_list, evaluate
from .tickets import WHOLE

GROUPS_PER_REALM = 10000  # users whose groups a process remembers per realm


@dataclass(eq=False)
class Identity:
    """Who asks: a user (a client's service account for a client acting for itself), the client
    acting, and the token's scopes and claims (the client-scope and regex policies read them);
    ``extra_roles`` are counted as held (the Admin API's evaluation of "what if they had");
    ``held_roles``, when the caller knows the user's effective roles already (a protocol's cache),
    spares reading them."""

    user: object
    client_id: str
    scopes: frozenset = frozenset()
    claims: dict = field(default_factory=dict)
    extra_roles: frozenset = frozenset()
    held_roles: frozenset | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    def roles(self):
        if "roles" not in self._cache:
            held = self.held_roles if self.held_roles is not None else realm_cache.effective_roles(self.user)
            self._cache["roles"] = set(held) | set(self.extra_roles)
        return self._cache["roles"]

    def group_ids(self):
        """The user's groups, remembered per realm configuration: a membership change drops the
        realm's configuration in every process (``realms.data.realm_cache``), and these with it,
        as the token endpoint's cached roles of a user; a decision then costs no query for them."""
        if "groups" not in self._cache:
            memo = realm_cache.stored(self.user.realm, "authz-user-groups", lambda realm: {})
            groups = memo.get(self.user.pk)
            if groups is None:
                groups = frozenset(self.user.groups.values_list("pk", flat=True))
                if len(memo) >= GROUPS_PER_REALM:
                    memo.clear()  # rare: read again as asked
                memo[self.user.pk] = groups
            self._cache["groups"] = groups
        return self._cache["groups"]


class Server:
    """A client's resource server settings, indexed for evaluation."""

    def __init__(self, client, settings):
        self.client = client
        self.settings = settings
        self.mode = settings.get("policyEnforcementMode", "ENFORCING")
        self.strategy = settings.get("decisionStrategy", "UNANIMOUS")
        self.resources = settings.get("resources", [])
        self.by_id = {r["_id"]: r for r in self.resources}
        self.scope_names = {s["name"] for s in settings.get("scopes", [])}
        self.policies = {p["name"]: p for p in settings.get("policies", [])}
        self.permissions = [p for p in settings.get("policies", []) if p["type"] in ("resource", "scope", "uma")]

    def resource_scopes(self, resource):
        return [s["name"] for s in resource.get("scopes", [])]

    def find(self, ref, identity, shared=()):
        """The resources ``ref`` names (Keycloak's ``permission`` parameter): an id, else a name,
        the identity's own resource first, then those shared with it (``shared``: resource ids),
        then the resource server's."""
        if ref in self.by_id:
            return [self.by_id[ref]]
        named = [r for r in self.resources if r["name"] == ref]
        own = [r for r in named if "owner" in r and r["owner"].get("id") == identity.user.pk]
        return own + [r for r in named if r["_id"] in shared and r not in own] + [r for r in named if "owner" not in r]

    def by_uri(self, uri, matching=False):
        """The resources with ``uri`` among their URIs (Keycloak's ``permission_resource_format=uri``);
        none and ``matching``: the resource server's own resource whose URI pattern best matches
        it (``permission_resource_matching_uri``, Keycloak's PathMatcher)."""
        exact = [r for r in self.resources if uri in r.get("uris", ())]
        if exact or not matching:
            return exact
        best = max(((rank, r) for r in self.resources if "owner" not in r for pattern in r.get("uris", ())
                    if (rank := path_match(pattern, uri)) is not None), key=lambda found: found[0], default=None)
        return [best[1]] if best else []

    def with_scopes(self, scopes):
        """The resources holding one of ``scopes``."""
        return [r for r in self.resources if set(self.resource_scopes(r)) & set(scopes)]


class Decider:
    """The decisions of one identity on one resource server (policies decided once each)."""

    def __init__(self, server, realm, identity, shared=None):
        self.server, self.realm, self.identity = server, realm, identity
        self.shared = shared or {}  # resource id -> scope names shared with the identity (tickets)
        self._granted = {}

    def granted(self, permission):
        name = permission["name"]
        if name not in self._granted:
            names = config_list(permission, "applyPolicies")
            outcomes = [evaluate(self.identity, self.realm, self.server.policies[n], self.server.policies) for n in names]
            self._granted[name] = bool(outcomes) and combine(permission.get("decisionStrategy", "UNANIMOUS"), outcomes)
        return self._granted[name]

    def decide(self, resource, scopes):
        """The scopes granted on ``resource`` (a set, possibly empty: the resource without scopes
        is granted), or None when it is denied. ``scopes`` empty asks for all of them."""
        server = self.server
        asked = set(scopes) or set(server.resource_scopes(resource))
        owner = resource.get("owner", {}).get("id")
        if server.mode == "DISABLED" or (owner is not None and owner == self.identity.user.pk):
            return asked
        applying = self.applying(resource, asked)
        shared = self._shared(resource, asked)
        if not applying:
            if shared is not None:
                return shared
            return asked if server.mode == "PERMISSIVE" else None
        if server.strategy == "CONSENSUS":
            granted = self._consensus(resource, asked, applying)
        else:
            granted = self._collect(resource, asked, applying)
        if shared is not None:
            return (granted or set()) | shared
        return granted

    def _shared(self, resource, asked):
        """The scopes asked that the owner of a user-managed resource shared with the identity
        (all of them for a ticket of the whole resource); None when nothing was shared."""
        tickets = self.shared.get(resource["_id"]) if resource.get("ownerManagedAccess") else None
        if not tickets:
            return None
        scopes = set(self.server.resource_scopes(resource))
        held = (scopes if WHOLE in tickets else set(tickets)) & asked
        return None if scopes and not held else held

    def applying(self, resource, asked):
        found = []
        for p in self.server.permissions:
            names = config_list(p, "resources")
            if p["type"] == "uma":
                if resource["_id"] in names and (set(config_list(p, "scopes")) & asked or not resource["scopes"]):
                    found.append(p)
            elif p["type"] == "resource":
                typed = p["config"].get("defaultResourceType")
                if resource["name"] in names or (typed and typed == resource.get("type")):
                    found.append(p)
            elif set(config_list(p, "scopes")) & asked and (not names or resource["name"] in names):
                found.append(p)
        return found

    def _collect(self, resource, asked, applying):
        """Keycloak's DecisionPermissionCollector for UNANIMOUS and AFFIRMATIVE."""
        granted, denied, denied_typed = set(), set(), set()
        resource_granted = any_deny = False
        user_owned = "owner" in resource
        for p in applying:
            kind = _kind(p)
            contains = resource["name" if p["type"] != "uma" else "_id"] in config_list(p, "resources")
            scopes = set(config_list(p, "scopes"))
            if self.granted(p):
                granted |= (asked & scopes) if kind == "scope" else asked
                if contains and (kind == "resource" or user_owned):
                    resource_granted = True
            else:
                any_deny = True
                if kind == "resource":
                    if contains or not resource_granted:
                        (denied if contains else denied_typed).update(asked)
                elif contains or not config_list(p, "resources"):
                    denied |= scopes
        if self.server.strategy == "AFFIRMATIVE":
            denied -= granted
        if resource_granted:
            denied |= denied_typed - granted
        if not denied:
            denied = denied_typed
        granted -= denied
        if not resource_granted and not granted and asked:
            return None
        if any_deny and not granted:
            return None
        return granted

    def _consensus(self, resource, asked, applying):
        """Scope by scope (the resource itself when it has none): more applying permissions
        grant it than deny it."""
        votes = {}
        for p in applying:
            covered = asked & set(config_list(p, "scopes")) if _kind(p) == "scope" else asked or {""}
            for scope in covered:
                yes, no = votes.get(scope, (0, 0))
                votes[scope] = (yes + 1, no) if self.granted(p) else (yes, no + 1)
        granted = {scope for scope, (yes, no) in votes.items() if yes > no}
        if not granted:
            return None
        return granted - {""}


def path_match(pattern, path):
    """How well a resource's URI pattern matches ``path`` (a higher tuple is better), or None:
    a template (``/albums/{id}``, a segment each, maybe ending in ``/*``), then the longest
    ``/prefix/*``, then a suffix (``*.html``), then ``/*`` (anything), as the policy enforcer's
    PathMatcher ranks them; an equal URI is found before."""
    if "{" in pattern:
        head, wild = (pattern[:-2], True) if pattern.endswith("/*") else (pattern, False)
        regex = "".join("[^/]+" if part.startswith("{") else re.escape(part)
                        for part in re.split(r"(\{[^}/]*\})", head)) + ("(/.*)?" if wild else "")
        return (3, len(pattern)) if re.fullmatch(regex, path) else None
    if pattern.endswith("/*") and pattern != "/*":
        prefix = pattern[:-2]
        return (2, len(prefix)) if path == prefix or path.startswith(prefix + "/") else None
    if pattern.startswith("*."):
        return (1, len(pattern)) if path.endswith(pattern[1:]) else None
    return (0, 0) if pattern == "/*" else None


def _kind(permission):
    """A user-managed (``uma``) permission decides as a scope permission of its resource, or as a
    resource permission when the resource has no scopes (Keycloak's UMA policy)."""
    if permission["type"] == "uma":
        return "scope" if config_list(permission, "scopes") else "resource"
    return permission["type"]


def decide(server, realm, identity, requests, shared=None):
    """The granted permissions of ``requests`` [(resource, scope names)], Keycloak's
    ``authorization.permissions`` entries: ``{"rsid", "rsname", "scopes"}`` (``scopes`` left out
    when empty), in the order asked."""
    decider = Decider(server, realm, identity, shared)
    out = []
    for resource, scopes in requests:
        granted = decider.decide(resource, scopes)
        if granted is not None:
            entry = {"rsid": resource["_id"], "rsname": resource["name"]}
            if granted:
                entry["scopes"] = sorted(granted)
            out.append(entry)
    return out


def all_requests(server, identity, shared=None):
    """Every resource the identity may be granted (Keycloak's evaluation of all permissions):
    the resource server's, the identity's own and those shared with it (resource ids)."""
    shared = shared or {}
    return [(r, ()) for r in server.resources
            if "owner" not in r or r["owner"].get("id") == identity.user.pk or r["_id"] in shared]
