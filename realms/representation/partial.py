"""Partial import into an existing realm (Keycloak's PartialImportRepresentation): identity
providers and their mappers, clients, realm and client roles, groups and users, read by the realm
import's parsers and written by its appliers, in one transaction; ``ifResourceExists`` decides
what an existing one becomes."""
import functools
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Q

from ..audit import admin_events
from ..errors import RealmsError
from ..models import Client, ClientScope, Component, Group, IdentityProvider, Role, User
from .clients import parse_client
from .fields import Parser, RepresentationError, as_list
from .groups import parse_group
from .identity_providers import parse_identity_providers
from .importer import _Applier
from .roles import parse_roles
from .user_storage import USER_STORAGE
from .users import parse_user

POLICIES = ("FAIL", "SKIP", "OVERWRITE")


class ResourceExists(RealmsError):
    """A resource exists and the policy is FAIL: Keycloak's 409 with this message."""


@dataclass
class PartialImportResults:
    results: list = field(default_factory=list)

    def rep(self):
        count = {a: sum(1 for r in self.results if r["action"] == a) for a in ("ADDED", "SKIPPED", "OVERWRITTEN")}
        return {"overwritten": count["OVERWRITTEN"], "added": count["ADDED"], "skipped": count["SKIPPED"],
                "results": self.results}


def _each(data, key, parse, p):
    return [parse(item, f"{key}[{i}]", p) for i, item in enumerate(as_list(data.get(key) or [], key))]


def _parse(data, p):
    if not isinstance(data, dict):
        raise RepresentationError("", "expected a JSON object (a PartialImportRepresentation)")
    # ``ifResourceExists`` is what the console sends; ``policy`` the same setting by its field name.
    policy = data.get("ifResourceExists", data.get("policy", "FAIL"))
    if policy not in POLICIES:
        raise RepresentationError("ifResourceExists", f"expected one of {', '.join(POLICIES)}")
    providers, mappers = parse_identity_providers(data, p)
    roles = data.get("roles") or {}
    if not isinstance(roles, dict):
        raise RepresentationError("roles", "expected a JSON object")
    realm_roles, client_roles = parse_roles(roles, p)
    return {
        "policy": policy,
        "identity_providers": providers,
        "identity_provider_mappers": mappers,
        "clients": _each(data, "clients", functools.partial(parse_client, imported=True), p),
        "realm_roles": realm_roles,
        "client_roles": client_roles,
        "groups": _each(data, "groups", parse_group, p),
        "users": _each(data, "users", parse_user, p),
    }


class _PartialApplier(_Applier):
    """The realm import's applier over an existing realm: names resolve to its rows."""

    def __init__(self, r, p, realm):
        super().__init__(r, p)
        self.realm = realm
        self.scopes = {s.name: s for s in ClientScope.objects.filter(realm=realm)}
        self.clients = {c.client_id: c for c in Client.objects.filter(realm=realm)}
        for role in Role.objects.filter(realm=realm).select_related("client"):
            if role.client_id is None:
                self.realm_roles[role.name] = role
            else:
                self.client_roles[(role.client.client_id, role.name)] = role
        self.groups = {g.path: g for g in Group.objects.filter(realm=realm).select_related("parent")}
        self.identity_providers = {i.alias: i for i in IdentityProvider.objects.filter(realm=realm)}
        self.components = {pk: pk for pk in Component.objects.filter(realm=realm, provider_type=USER_STORAGE)
                           .values_list("pk", flat=True)}
        links = realm.default_scope_links.select_related("client_scope")
        r["default_default_scopes"] = [x.client_scope.name for x in links if x.default]
        r["default_optional_scopes"] = [x.client_scope.name for x in links if not x.default]


def _user_finder(realm, users):
    """Find an existing user by username or (duplicate emails off) email: one query for all of
    them (both are kept lower-case), as an import may carry a great many."""
    names = {u["fields"]["username"] for u in users}
    emails = {u["fields"].get("email") for u in users} - {None, ""}
    if realm.duplicate_emails_allowed:
        emails = set()
    by_name, by_email = {}, {}
    if users:
        for user in User.objects.filter(Q(realm=realm) & (Q(username__in=names) | Q(email__in=emails))):
            by_name[user.username] = user
            if user.email in emails:
                by_email.setdefault(user.email, user)
    return lambda u: by_name.get(u["fields"]["username"]) or by_email.get(u["fields"].get("email") or None)


def _user_exists_message(realm, u):
    # Keycloak's wording, whose condition reads the duplicate-emails switch the other way round.
    name, email = u["fields"]["username"], u["fields"].get("email")
    if not email or not realm.duplicate_emails_allowed:
        return f"User with user name {name} already exists."
    return f"User with user name {name} or with email {email} already exists."


def partial_import(realm, data, *, auth=None):
    """Import ``data`` (a request's body: parsing may change it, a copy of 10,000 users would
    cost more than it) into ``realm``; PartialImportResults. ResourceExists (policy FAIL) or
    RepresentationError leave the realm unchanged. Each resource added or overwritten is an
    admin event (CREATE or UPDATE) of the realm, as Keycloak fires them."""
    p = Parser()
    r = _parse(data, p)
    policy = r["policy"]
    out = PartialImportResults()
    with transaction.atomic():
        a = _PartialApplier(r, p, realm)
        # Keycloak's order: identity providers, clients, roles, groups, users (later ones name the
        # earlier ones).
        kinds = [
            ("IDP", r["identity_providers"], lambda i: i["fields"]["alias"],
             lambda i: IdentityProvider.objects.filter(realm=realm, alias=i["fields"].get("alias")).first(),
             lambda i: f"Identity Provider '{i['fields']['alias']}' already exists."),
            ("CLIENT", r["clients"], lambda c: c["fields"]["client_id"],
             lambda c: Client.objects.filter(realm=realm, client_id=c["fields"]["client_id"]).first(),
             lambda c: f"Client id '{c['fields']['client_id']}' already exists"),
            ("REALM_ROLE", r["realm_roles"], lambda x: x["fields"]["name"],
             lambda x: Role.objects.filter(realm=realm, client=None, name=x["fields"]["name"]).first(),
             lambda x: f"Realm role '{x['fields']['name']}' already exists."),
            ("CLIENT_ROLE", [(cid, x) for cid, roles in r["client_roles"].items() for x in roles],
             lambda cx: cx[1]["fields"]["name"],
             lambda cx: Role.objects.filter(realm=realm, client__client_id=cx[0], name=cx[1]["fields"]["name"]).first(),
             lambda cx: f"Client role '{cx[1]['fields']['name']}' for client '{cx[0]}' already exists."),
            ("GROUP", r["groups"], lambda g: g["fields"]["name"],
             lambda g: Group.objects.filter(realm=realm, parent=None, name=g["fields"]["name"]).first(),
             lambda g: f"Group '/{g['fields']['name']}' already exists"),
            ("USER", r["users"], lambda u: u["fields"]["username"], _user_finder(realm, r["users"]),
             lambda u: _user_exists_message(realm, u)),
        ]
        plans = []
        for _kind, reps, _name_of, find, exists_message in kinds:  # every check before any write
            plan = []
            for rep in reps:
                existing = find(rep)
                if existing is not None and policy == "FAIL":
                    raise ResourceExists(exists_message(rep))
                plan.append((rep, existing))
            plans.append(plan)
        for (kind, _reps, name_of, _find, _msg), plan in zip(kinds, plans, strict=True):
            results = []
            if kind == "USER":  # users may be a great many: replaced and written in bulk
                written = [(rep, existing) for rep, existing in plan if existing is None or policy == "OVERWRITE"]
                User.objects.filter(pk__in=[e.pk for _, e in written if e is not None]).delete()
                created = iter(a.add_users([rep for rep, _ in written]))
            for rep, existing in plan:
                if existing is not None and policy == "SKIP":
                    results.append(_result("SKIPPED", kind, name_of(rep), existing.pk))
                    continue
                if kind == "USER":
                    obj = next(created)
                else:
                    if existing is not None:
                        _forget(a, kind, rep, existing)
                        existing.delete()
                    obj = _create(a, kind, rep)
                results.append(_result("OVERWRITTEN" if existing is not None else "ADDED", kind, name_of(rep), obj.pk))
            out.results += sorted(results, key=lambda x: _ORDER[x["action"]])
            if kind == "IDP":  # the mappers of the providers written (or of others of the realm)
                skipped = {name_of(rep) for rep, existing in plan if existing is not None and policy == "SKIP"}
                a.add_identity_provider_mappers([m for m in r["identity_provider_mappers"]
                                                 if m.get("identityProviderAlias") not in skipped])
            if kind == "CLIENT":
                a.link_client_scopes([c for c, existing in plan if existing is None or policy == "OVERWRITE"])
            if kind == "CLIENT_ROLE":
                _add_composites(a, plans[[k[0] for k in kinds].index("REALM_ROLE")] + plan, policy)
        a.add_service_accounts()
        a.add_authorization()
        # Keycloak's events: one per resource written, of the realm, at its ResourceType's path.
        admin_events.record_many(realm, [
            ("CREATE" if res["action"] == "ADDED" else "UPDATE", "REALM", f"{_PATHS[res['resourceType']]}/{res['id']}",
             res) for res in out.results if res["action"] != "SKIPPED"], auth=auth)
    return out


# Keycloak's partial import ResourceType.getPath (roles under "realms" and "clients", as it has them).
_PATHS = {"IDP": "identity-provider/instances",
          "CLIENT": "clients", "REALM_ROLE": "realms", "CLIENT_ROLE": "clients", "GROUP": "groups", "USER": "users"}
_ORDER = {"OVERWRITTEN": 0, "SKIPPED": 1, "ADDED": 2}  # within a kind, as Keycloak lists them


def _result(action, kind, name, pk):
    return {"action": action, "resourceType": kind, "resourceName": name, "id": pk}


def _forget(a, kind, rep, existing):
    if kind == "IDP":
        a.identity_providers.pop(existing.alias, None)
    elif kind == "CLIENT":
        a.clients.pop(existing.client_id, None)
        a.client_roles = {k: v for k, v in a.client_roles.items() if k[0] != existing.client_id}
    elif kind == "REALM_ROLE":
        a.realm_roles.pop(existing.name, None)
    elif kind == "CLIENT_ROLE":  # its client may be gone already (overwritten above)
        a.client_roles.pop((rep[0], existing.name), None)
    elif kind == "GROUP":
        a.groups = {k: v for k, v in a.groups.items() if k != existing.path and not k.startswith(existing.path + "/")}


def _create(a, kind, rep):
    if kind == "IDP":
        return a.add_identity_providers([rep], [])[0]
    if kind == "CLIENT":
        a.add_client(rep)
        return a.clients[rep["fields"]["client_id"]]
    if kind == "REALM_ROLE":
        a.realm_roles[rep["fields"]["name"]] = role = a.new_role(rep, None)
        return role
    if kind == "CLIENT_ROLE":
        client_id, role_rep = rep
        a.client_roles[(client_id, role_rep["fields"]["name"])] = role = \
            a.new_role(role_rep, a.client(client_id, f"roles.client.{client_id}"))
        return role
    a.add_group(rep, None)  # a GROUP (users are written together, in bulk)
    return a.groups["/" + rep["fields"]["name"]]


def _add_composites(a, planned_roles, policy):
    """The composites of the roles written (all roles exist by now, so they may name each other)."""
    pending = []
    for item, existing in planned_roles:
        if existing is not None and policy == "SKIP":
            continue
        if isinstance(item, tuple):
            client_id, rep = item
            pending.append((rep, a.client_roles[(client_id, rep["fields"]["name"])]))
        else:
            pending.append((item, a.realm_roles[item["fields"]["name"]]))
    a.add_composites(pending)
