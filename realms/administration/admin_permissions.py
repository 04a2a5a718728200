"""Who may administer what: ``can``, the one authorization function the Admin REST API and the
console both call (docs/decisions/0032).

Two layers, as Keycloak 26.2 with fine-grained admin permissions v2:

- **Roles.** A realm's own users administer it with the roles of its ``realm-management``
  client; users of the master realm administer realm X with the roles of the master client
  ``X-realm`` (Keycloak's delegated admins), and the master realm's ``admin`` role administers
  every realm. Composites (``realm-admin`` holds every role, ``view-users`` holds
  ``query-users`` and ``query-groups``) come from the database. Holding a role grants its
  operation on every object of the realm, and evaluation of permissions is skipped.
- **Permissions** (only where the realm's ``adminPermissionsEnabled`` is on, and only for the
  realm's own users, as Keycloak's ``isAdminSameRealm``): the ``admin-permissions`` client's
  authorization settings hold scope permissions on the resource types Users, Groups, Clients and
  Roles, each for every resource of its type or for named ones, applying user, group, role and
  client policies (logic POSITIVE or NEGATIVE) combined by the permission's decision strategy;
  the permissions applying to one object and scope are combined by the settings' decision
  strategy. A user is also covered by the permissions on the groups they belong to, through the
  member scopes (``view-members`` for ``view``, ``manage-members`` for ``manage``,
  ``impersonate-members`` for ``impersonate``, ``manage-membership-of-members`` for
  ``manage-group-membership``). Scopes are independent: ``manage`` does not
  imply ``view``; but ``reset-password`` (Keycloak 26.4), where no permission with it applies to
  the user, is decided by the user's ``manage`` (``FALLBACK_SCOPES``; docs/decisions/0093).

The lists of users, groups and clients hold what the admin may list (``visible``, a filter of
the list's query; docs/decisions/0043); so do the console's pickers and the subgroup counts
(docs/decisions/0045).
"""
from dataclasses import dataclass, field

from django.db.models import Q

from ..authz.policies import combine, config_list, evaluate
from ..data import realm_cache
from ..data.builtins import CLIENT_ROLES
from ..models import Client, Group, Realm, Role, User, effective_role_ids, effective_role_ids_read
from ..models.users import client_roles_named, realm_role_ids

ADMIN_ROLE = "admin"  # the master realm's role that administers every realm
REALM_MANAGEMENT = "realm-management"
REALM_ADMIN = "realm-admin"
PERMISSIONS_CLIENT = "admin-permissions"
CONSOLE_CLIENT = "security-admin-console"

# Keycloak 26's realm-management roles (realm-admin contains all of them).
MANAGEMENT_ROLES = frozenset(r["name"] for r in CLIENT_ROLES[REALM_MANAGEMENT])

# The admin-permissions schema (resource type: scopes) of Keycloak 26.7 (AdminPermissionsSchema), but
# for its Organizations type (``LEFT_OUT_TYPES``).
SCHEMA = {
    "Users": ("manage", "map-roles", "view", "manage-group-membership", "impersonate", "reset-password"),
    "Groups": ("manage", "view-members", "view", "manage-membership", "manage-members", "impersonate-members",
               "manage-membership-of-members"),
    "Clients": ("map-roles-composite", "manage", "map-roles", "map-roles-client-scope", "view"),
    "Roles": ("map-role-client-scope", "map-role-composite", "map-role"),
}
# Keycloak 26.7's resource types left out of SCHEMA, and the words refusing a permission on one
# (docs/decisions/0093): our organization routes are decided by ``manage-realm`` alone, so a
# permission on an organization would decide nothing. Keycloak's own resource for the type, which
# its exports carry, names no object and is kept as given.
LEFT_OUT_TYPES = {
    "Organizations": "Resource type Organizations is not supported: organizations are administered with the "
                     "manage-realm role alone, which admin permissions do not narrow.",
}


def resource_type_refusal(kind, unknown="Resource type not provided."):
    """Why ``kind``, not in SCHEMA, is no permission's resource type: ``unknown`` (Keycloak's message)
    for a type Keycloak does not know either, ours for one it has and we leave out."""
    return LEFT_OUT_TYPES.get(kind if isinstance(kind, str) else None, unknown)


# The policy types admin permissions apply (realms.authz.policies evaluates them).
POLICY_TYPES = ("user", "group", "role", "client")
# A user's scope that a permission on one of the user's groups grants through its member scope.
MEMBER_SCOPES = {"view": "view-members", "manage": "manage-members", "impersonate": "impersonate-members",
                 "manage-group-membership": "manage-membership-of-members"}
# A scope that, where no permission with it applies to the object, is decided by another (Keycloak's
# UserPermissionsV2.canResetPassword: a realm that never used reset-password keeps manage's answer).
FALLBACK_SCOPES = {("Users", "reset-password"): "manage"}
# A client's role is also mapped through the client's scope (Keycloak's RolePermissionsV2 asks
# ClientPermissions.canMapRoles, canMapCompositeRoles and canMapClientScopeRoles).
CLIENT_ROLE_SCOPES = {"map-role": "map-roles", "map-role-composite": "map-roles-composite",
                      "map-role-client-scope": "map-roles-client-scope"}
TYPE_OF = {User: "Users", Group: "Groups", Client: "Clients", Role: "Roles"}
MODEL_OF = {kind: model for model, kind in TYPE_OF.items()}
# The scopes that list an object (Keycloak's partial evaluation reads the permissions with
# ``view`` or ``view-members``; roles have no such scope and are not narrowed).
LIST_SCOPES = {"Users": ("view",), "Groups": ("view", "view-members"), "Clients": ("view",)}

# The roles that grant a scope on every object of the type without evaluating permissions
# (Keycloak's UserPermissionsV2, GroupPermissionsV2, ClientPermissionsV2, RolePermissionsV2).
GRANTING_ROLES = {
    ("Users", "view"): ("view-users", "manage-users"),
    ("Users", "manage"): ("manage-users",),
    ("Users", "map-roles"): ("manage-users",),
    ("Users", "manage-group-membership"): ("manage-users",),
    ("Users", "impersonate"): ("impersonation",),
    ("Users", "reset-password"): ("manage-users",),
    ("Groups", "view"): ("view-users", "manage-users"),
    ("Groups", "view-members"): ("view-users", "manage-users"),
    ("Groups", "manage"): ("manage-users",),
    ("Groups", "manage-members"): ("manage-users",),
    ("Groups", "manage-membership"): ("manage-users",),
    ("Groups", "impersonate-members"): ("impersonation",),
    ("Groups", "manage-membership-of-members"): ("manage-users",),
    ("Clients", "view"): ("view-clients", "manage-clients"),
    ("Clients", "manage"): ("manage-clients",),
    ("Clients", "map-roles"): ("manage-users",),
    ("Clients", "map-roles-composite"): ("manage-clients",),
    ("Clients", "map-roles-client-scope"): ("manage-clients",),
}
# The roles that grant a mapping scope on every role of a container, realm or client (Keycloak's
# RolePermissionsV2: canMapRole, canMapComposite, canMapClientScope): a realm role is put into a
# composite or a scope by ``manage-realm``, a client role by ``manage-clients``.
MAPPING_ROLES = {
    ("map-role", "realm"): ("manage-users",), ("map-role", "client"): ("manage-users",),
    ("map-role-composite", "realm"): ("manage-realm",), ("map-role-composite", "client"): ("manage-clients",),
    ("map-role-client-scope", "realm"): ("manage-realm",), ("map-role-client-scope", "client"): ("manage-clients",),
}
# The administration roles (Keycloak's AdminRoles.ALL_ROLES) and those any mapper of them may
# hand out (RolePermissions.checkAdminRoles lets the query roles through).
ADMINISTRATION_ROLES = MANAGEMENT_ROLES | {ADMIN_ROLE, "create-realm"}
QUERY_ROLES = frozenset(r for r in MANAGEMENT_ROLES if r.startswith("query-"))
# A role that a route names is also held through these (Keycloak's RealmPermissions and the
# like: managing a thing includes viewing it, viewing users or clients includes querying them).
ROLE_GRANTED_BY = {
    "view-realm": ("manage-realm",), "view-events": ("manage-events",),
    "view-identity-providers": ("manage-identity-providers",), "view-authorization": ("manage-authorization",),
    "view-users": ("manage-users",), "query-users": ("view-users", "manage-users"),
    "query-groups": ("view-users", "manage-users"), "view-clients": ("manage-clients",),
    "query-clients": ("view-clients", "manage-clients"),
}
# A route's role and the scope of the object (or, on a collection, of its type) that stands for
# it under fine-grained permissions.
ROLE_SCOPES = {
    "query-users": ("Users", "view"), "view-users": ("Users", "view"), "manage-users": ("Users", "manage"),
    "query-groups": ("Groups", "view"), "query-clients": ("Clients", "view"),
    "view-clients": ("Clients", "view"), "manage-clients": ("Clients", "manage"),
}


def delegated_client_id(realm_name):
    """The master realm's client whose roles administer ``realm_name`` (Keycloak's ``X-realm``)."""
    return f"{realm_name}-realm"


@dataclass(eq=False)
class Admin:
    """Who acts: a user and the client they act through (the token's ``azp``, or the console).
    Their roles are read once per Admin (once per request): the checks of roles answer from their
    ids (``role_ids``), and the rows (``roles``) are built only for the policies of fine-grained
    permissions, which read them. A master admin holds every realm's management roles, 19,000
    with a thousand realms (decision 0107)."""

    user: User
    client_id: str = CONSOLE_CLIENT
    _cache: dict = field(default_factory=dict, repr=False)

    def role_ids(self):
        """The ids of the roles the user holds, composites expanded: read with the Admin API's
        caller (no statement; kept there for ``roles``), else by one query."""
        if "role-ids" not in self._cache:
            roles = self._cache.get("roles")
            self._cache["role-ids"] = ({r.pk for r in roles} if roles is not None
                                       else effective_role_ids(self.user, keep=True))
        return self._cache["role-ids"]

    def roles(self):
        if "roles" not in self._cache:
            self._cache["roles"] = realm_cache.effective_roles(self.user)
        return self._cache["roles"]

    def holds_realm_role(self, name):
        """Whether the user holds the role ``name`` of their own realm, from the role ids and the
        realm's cached {name: id} of its realm roles."""
        return realm_cache.stored(self.user.realm, "realm-role-ids", realm_role_ids).get(name) in self.role_ids()

    def client_role_names(self, client_id):
        """The names of the roles of the user's realm's client ``client_id`` that the user holds,
        from the role ids and the realm's cached {id: (clientId, name)}, to which the ids it does
        not yet name are added (one query; a role made a moment ago counts at once)."""
        named = realm_cache.stored(self.user.realm, "client-roles-named", lambda realm: {})
        ids = self.role_ids()
        missing = {pk for pk in ids if pk not in named}  # not ids - named.keys(): other threads add to it
        if missing:
            named.update(client_roles_named(self.user.realm, missing))
        return {found[1] for found in map(named.get, ids) if found is not None and found[0] == client_id}

    def group_ids(self):
        if "groups" not in self._cache:
            self._cache["groups"] = set(self.user.groups.values_list("pk", flat=True))
        return self._cache["groups"]


def management_roles(admin, realm) -> frozenset:
    """The realm-management roles ``admin`` holds in ``realm`` (composites expanded)."""
    user = admin.user
    if user.realm.is_master and _master_admin(admin):
        return MANAGEMENT_ROLES
    if user.realm_id == realm.pk:
        names = admin.client_role_names(REALM_MANAGEMENT)
    elif user.realm.is_master:
        names = admin.client_role_names(delegated_client_id(realm.name))
    else:
        return frozenset()
    return MANAGEMENT_ROLES if REALM_ADMIN in names else frozenset(names)


def _master_admin(admin):
    # Answered once per Admin, not once per realm a console page looks at. From the role ids when
    # they are at hand (the Admin API reads them with its caller's row: no statement, decision
    # 0051); else by one yes-or-no query, never by building the roles: a master admin holds every
    # realm's management roles, 19,000 rows with a thousand realms (decision 0107).
    if "master-admin" not in admin._cache:
        if "role-ids" in admin._cache or "roles" in admin._cache or effective_role_ids_read(admin.user):
            held = admin.holds_realm_role(ADMIN_ROLE)
        else:  # the callers asked for a master realm's user: the answer Django's admin site asks too
            held = admin.user.is_staff
        admin._cache["master-admin"] = held
    return admin._cache["master-admin"]


def administers(admin, realm) -> bool:
    """Whether ``admin`` holds any administration right in ``realm`` (roles or permissions)."""
    if management_roles(admin, realm):
        return True
    settings = _settings(admin, realm)
    return settings is not None and any(_granted(admin, realm, settings, p) for p in _permissions(settings))


def holds(admin, realm, role) -> bool:
    """Whether ``admin``'s roles alone grant ``role`` in ``realm`` (on every object)."""
    held = management_roles(admin, realm)
    return role in held or any(r in held for r in ROLE_GRANTED_BY.get(role, ()))


def can(admin, realm, action, target=None) -> bool:
    """May ``admin`` do ``action`` in ``realm``?

    ``action`` is a realm-management role name (``"view-realm"``, ``"query-users"`` ...), or a
    ``(resource type, scope)`` pair such as ``("Users", "view")`` with ``target`` the object (a
    User, Group, Client or Role of the realm) or None for every object of the type. A role name
    that has a scope counterpart (``ROLE_SCOPES``) is also granted by a permission on
    ``target`` (its type taken from the object), or on every object of the type."""
    held = management_roles(admin, realm)
    if isinstance(action, str):
        if holds(admin, realm, action):
            return True
        counterpart = ROLE_SCOPES.get(action)
        if counterpart is None:
            return False
        kind = TYPE_OF.get(type(target))
        if kind is None or counterpart[1] not in SCHEMA[kind]:  # not an object of a type with that scope
            kind, target = counterpart[0], None
        action = (kind, counterpart[1])
    kind, scope = action
    if kind == "Roles":
        return _may_map(admin, realm, held, scope, target)
    if any(role in held for role in GRANTING_ROLES[(kind, scope)]):
        return True
    settings = _settings(admin, realm)
    return settings is not None and _evaluate(admin, realm, settings, kind, scope, target)


def _may_map(admin, realm, held, scope, role):
    """Keycloak's RolePermissionsV2 for ``scope`` (``map-role``, ``map-role-composite`` or
    ``map-role-client-scope``) on ``role`` (None: every role of the realm): the role of
    ``MAPPING_ROLES`` for the role's container, else a permission on the role's client
    (``map-roles`` ...) or on the role. An administration role is mapped to a user or into a
    composite only by a realm admin where permissions are on, else by a mapper who holds it
    (``_hands_out``); scopes take any role."""
    container = "realm" if role is None or role.client_id is None else "client"
    by_role = any(r in held for r in MAPPING_ROLES[(scope, container)])
    if scope != "map-role-client-scope" and role is not None and _administration_role(realm, role):
        if realm.admin_permissions_enabled:
            return REALM_ADMIN in held
        return by_role and _hands_out(admin, realm, role)
    if by_role:
        return True
    settings = _settings(admin, realm)
    if settings is None:
        return False
    if (container == "client" and role is not None
            and _evaluate(admin, realm, settings, "Clients", CLIENT_ROLE_SCOPES[scope], role.client)):
        return True
    return _evaluate(admin, realm, settings, "Roles", scope, role)


def _administration_role(realm, role):
    """Keycloak's isRealmAdminRole: a role of the realm's ``realm-management`` client, of the
    master realm or of one of its ``X-realm`` clients, named as an administration role."""
    if role.name not in ADMINISTRATION_ROLES:
        return False
    if role.client_id is None:
        return role.realm.is_master
    client_id = role.client.client_id
    return client_id == REALM_MANAGEMENT or (role.realm.is_master and client_id.endswith("-realm"))


def _hands_out(admin, realm, role):
    """Keycloak's checkAdminRoles: an administration role is handed out by an admin who holds it
    (a realm admin holds them all), or holds what it grants; query roles by anyone."""
    if role.pk in admin.role_ids():
        return True
    if role.client_id is None or role.client.client_id != REALM_MANAGEMENT:
        return False
    return role.name in QUERY_ROLES or holds(admin, realm, role.name)


def visible(admin, realm, kind, objects, scopes=None):
    """``objects`` (a queryset of the realm's Users, Groups, Clients or Roles) narrowed to those on
    which ``admin`` holds one of ``scopes``, by default the scopes that list them (``LIST_SCOPES``),
    as a filter of the query (so ``first``/``max`` page the visible set, and a count counts it).

    Keycloak 26.2 lists an object where the admin holds a list scope on it (``view``, and for
    groups also ``view-members``): every object with a role that grants the scope
    (``view-users``, ``view-clients`` ...) or a permission on every object of the type, minus
    those a permission naming them denies; otherwise only the objects permissions name and
    grant. Each named object is decided by ``can``, as its own page is. The same filter narrows
    the subgroups a group's ``subGroupCount`` counts and the console's pickers; roles, which have
    no list scope, are narrowed there for a mapping scope (``map-role`` ...): they are few, and
    the role that grants a mapping scope depends on the role's container and does not grant
    administration roles (``_may_map``), so each is decided by ``can`` (a realm admin of a realm
    other than master maps them all)."""
    scopes = tuple(scopes or LIST_SCOPES[kind])

    def listed(target):
        return any(can(admin, realm, (kind, scope), target) for scope in scopes)

    held = management_roles(admin, realm)
    if kind == "Roles":
        if REALM_ADMIN in held and not realm.is_master:
            return objects  # a realm admin maps every role (the ones of master's admins are in master)
        return objects.filter(pk__in=[r.pk for r in objects.select_related("client", "realm") if listed(r)])
    if any(role in held for scope in scopes for role in GRANTING_ROLES[(kind, scope)]):
        return objects  # a role grants them all: no need to load the objects that permissions name
    key = ("visible", realm.pk, kind, scopes)  # a request may narrow several queries alike
    if key not in admin._cache:
        every = listed(None)
        admin._cache[key] = every, [o.pk for o in _named(admin, realm, kind) if listed(o) != every]
    every, named = admin._cache[key]
    return objects.exclude(pk__in=named) if every else objects.filter(pk__in=named)


def _named(admin, realm, kind):
    """The objects of ``kind`` that some permission names (a user also through one of their
    groups)."""
    settings = _settings(admin, realm)
    if settings is None:
        return []
    ids = {name: set() for name in SCHEMA}
    for p in _permissions(settings):
        ids[p["resourceType"]] |= set(p["resources"])
    where = Q(pk__in=ids[kind])
    if kind == "Users":
        where |= Q(groups__in=ids["Groups"])
    return list(MODEL_OF[kind].objects.filter(where, realm=realm).distinct())


# --- permissions -----------------------------------------------------------------------------

def _settings(admin, realm):
    """The realm's authorization settings when they apply to ``admin``, else None."""
    if not realm.admin_permissions_enabled or admin.user.realm_id != realm.pk:
        return None
    key = ("settings", realm.pk)
    if key not in admin._cache:
        client = Client.objects.filter(realm=realm, client_id=PERMISSIONS_CLIENT).only("authorization_settings").first()
        admin._cache[key] = client.authorization_settings if client and client.authorization_settings else None
    return admin._cache[key]


def _permissions(settings):
    """The scope permissions, each as {resourceType, resources (names), scopes, policies, strategy}."""
    out = []
    for p in settings.get("policies", []):
        if p.get("type") != "scope":
            continue
        kind = p["config"]["defaultResourceType"]
        resources = [r for r in config_list(p, "resources") if r != kind]
        out.append({"name": p["name"], "resourceType": kind, "resources": resources,
                    "scopes": config_list(p, "scopes"), "policies": config_list(p, "applyPolicies"),
                    "decisionStrategy": p.get("decisionStrategy", "UNANIMOUS")})
    return out


def _applicable(permissions, kind, scope, target, target_groups):
    """The permissions that decide ``scope`` on ``target`` (every object of ``kind`` when None)."""
    found = []
    for p in permissions:
        if p["resourceType"] == kind and scope in p["scopes"]:
            if not p["resources"] or (target is not None and target.pk in p["resources"]):
                found.append(p)
        elif (kind == "Users" and p["resourceType"] == "Groups" and MEMBER_SCOPES.get(scope) in p["scopes"]
              and target_groups & set(p["resources"])):
            found.append(p)
    return found


def _evaluate(admin, realm, settings, kind, scope, target):
    groups = set(target.groups.values_list("pk", flat=True)) if kind == "Users" and target is not None else set()
    permissions = _permissions(settings)
    found = _applicable(permissions, kind, scope, target, groups)
    if not found and (kind, scope) in FALLBACK_SCOPES:
        found = _applicable(permissions, kind, FALLBACK_SCOPES[(kind, scope)], target, groups)
    if not found:
        return False
    return combine(settings.get("decisionStrategy", "UNANIMOUS"), [_granted(admin, realm, settings, p) for p in found])


def explain(admin, realm, kind, target=None):
    """{scope of ``kind``: (granted, names of the permissions that applied)} on ``target`` (every
    object of the type when None), by the permissions alone: the Admin API's policy evaluation
    of the admin-permissions client (``admin`` may be any identity with ``roles()``)."""
    settings = _settings(admin, realm)
    if settings is None:
        return {scope: (False, []) for scope in SCHEMA[kind]}
    groups = set(target.groups.values_list("pk", flat=True)) if kind == "Users" and target is not None else set()
    out = {}
    for scope in SCHEMA[kind]:
        found = _applicable(_permissions(settings), kind, scope, target, groups)
        granted = combine(settings.get("decisionStrategy", "UNANIMOUS"), [_granted(admin, realm, settings, p) for p in found])
        out[scope] = (granted, [p["name"] for p in found])
    return out


def _granted(admin, realm, settings, permission):
    """The permission's decision for ``admin``: its policies combined by its strategy (once per
    request: a list decides many objects by the same permissions)."""
    key = ("granted", realm.pk, permission["name"])
    if key not in admin._cache:
        policies = {p["name"]: p for p in settings.get("policies", [])}
        admin._cache[key] = combine(permission["decisionStrategy"],
                                     [evaluate(admin, realm, policies[n], policies) for n in permission["policies"]])
    return admin._cache[key]


# --- delegated admins: the master realm's X-realm clients ------------------------------------

def ensure_delegated_client(realm):
    """The master realm's ``X-realm`` client for ``realm``, with the realm-management roles and
    their composites, each contained in the master realm's ``admin`` role (as Keycloak creates
    them with every realm). Mapping its roles to a master user delegates the realm's
    administration to them."""
    master = Realm.objects.filter(name="master").first()
    if master is None or realm.pk == master.pk:
        return None
    client, _ = Client.objects.get_or_create(
        realm=master, client_id=delegated_client_id(realm.name),
        defaults={"name": f"{realm.name} Realm", "bearer_only": True, "attributes": {"realm_client": "true"}})
    reps = CLIENT_ROLES[REALM_MANAGEMENT]
    roles = {rep["name"]: Role.objects.get_or_create(realm=master, client=client, name=rep["name"],
                                                     defaults={"description": rep["description"]})[0]
             for rep in reps}
    for rep in reps:
        inside = rep.get("composites", {}).get("client", {}).get(REALM_MANAGEMENT, [])
        roles[rep["name"]].composites.add(*(roles[name] for name in inside))
    admin_role = Role.objects.filter(realm=master, client=None, name=ADMIN_ROLE).first()
    if admin_role is not None:
        admin_role.composites.add(*roles.values())
    return client


def grant_delegated_admin(user, realm):
    """A master user who created ``realm`` administers it (Keycloak's ``create-realm``)."""
    client = ensure_delegated_client(realm)
    if client is not None:
        user.roles.add(*Role.objects.filter(client=client, name=REALM_ADMIN))


def _forget_delegated_client(sender, instance, **kwargs):
    Client.objects.filter(realm__name="master", client_id=delegated_client_id(instance.name)).delete()


def rename_delegated_client(old_name, new_name):
    client = Client.objects.filter(realm__name="master", client_id=delegated_client_id(old_name)).first()
    if client is not None:
        # Saved, not updated: its signal drops the master realm's cached role rows, which name it.
        client.client_id, client.name = delegated_client_id(new_name), f"{new_name} Realm"
        client.save(update_fields=["client_id", "name"])


def connect_signals():
    from django.db.models.signals import post_delete

    post_delete.connect(_forget_delegated_client, sender=Realm, dispatch_uid="admin-permissions-delegated-client")


# --- the console -------------------------------------------------------------------------------

def administers_some_realm(admin) -> bool:
    """Whether ``admin`` may use the console at all (a master admin without reading every realm)."""
    return (admin.user.realm.is_master and _master_admin(admin)) or bool(administered_realms(admin))


def administered_realms(admin):
    """The realms ``admin`` may administer: their own (a realm's users), or for master users the
    realms whose ``X-realm`` roles (or ``admin``) they hold. Read once per Admin: a console page
    asks for every module it shows."""
    if "administered" not in admin._cache:
        if not admin.user.realm.is_master:
            found = [admin.user.realm] if administers(admin, admin.user.realm) else []
        else:
            found = [realm for realm in Realm.objects.order_by("name") if administers(admin, realm)]
        admin._cache["administered"] = found
    return admin._cache["administered"]


def console_admin(request):
    """The console's ``Admin`` for the signed-in user, once per request."""
    if not hasattr(request, "_console_admin"):
        request._console_admin = Admin(request.user, CONSOLE_CLIENT)
    return request._console_admin
