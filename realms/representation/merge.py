"""Step 2 of an import: merge in Keycloak's built-ins (realms/data/builtins.py) the file lacks, by name,
so a created realm and an imported one take the same path."""
from ..data import builtins
from .authentication import merge_builtin_authentication
from .client_scopes import parse_scope
from .clients import parse_client
from .fields import Parser
from .roles import parse_role, parse_scope_mapping


def _builtin_client(rep):
    p = Parser()
    return parse_client(rep, f"(built-in client {rep['clientId']})", p)


_MIGRATED_SCOPES = {"acr": 18, "basic": 25}


def merge_builtins(r):
    name = r["name"]
    added_scopes = set()
    scope_names = {s["fields"]["name"] for s in r["scopes"]}
    p = Parser()
    for rep in builtins.client_scopes():
        if rep["name"] not in scope_names:
            r["scopes"].append(parse_scope(rep, f"(built-in client scope {rep['name']})", p))
            added_scopes.add(rep["name"])
    # A file's explicit scope lists are kept as written, except that an export from a Keycloak
    # older than a built-in scope gets it linked as Keycloak's migration would (acr came with
    # 18, basic with 25); a file without lists gets the built-in defaults.
    migrated = {s for s, since in _MIGRATED_SCOPES.items() if s in added_scopes and r["version"] < since}
    for key, defaults in (("default_default_scopes", builtins.DEFAULT_DEFAULT_SCOPES),
                          ("default_optional_scopes", builtins.DEFAULT_OPTIONAL_SCOPES)):
        if r[key] is None:
            r[key] = list(defaults)
        else:
            r[key] += [s for s in defaults if s in migrated and s not in r[key]]
    scope_protocol = {s["fields"]["name"]: s["fields"].get("protocol", builtins.OIDC) for s in r["scopes"]}
    for client in r["clients"]:
        protocol = client["fields"].get("protocol", builtins.OIDC)
        for key, defaults in (("default_scopes", builtins.DEFAULT_DEFAULT_SCOPES),
                              ("optional_scopes", builtins.DEFAULT_OPTIONAL_SCOPES)):
            if client[key] is not None:
                client[key] += [s for s in defaults
                                if s in migrated and scope_protocol[s] == protocol and s not in client[key]]

    client_ids = {c["fields"]["client_id"] for c in r["clients"]}
    added_clients = set()
    for rep in builtins.clients(name):
        if rep["clientId"] not in client_ids:
            r["clients"].append(_builtin_client(rep))
            added_clients.add(rep["clientId"])
    for client_id, roles in builtins.CLIENT_ROLES.items():
        present = {x["fields"]["name"] for x in r["client_roles"].get(client_id, [])}
        for rep in roles:
            if rep["name"] not in present:
                r["client_roles"].setdefault(client_id, []).append(
                    parse_role(rep, f"(built-in role {client_id}:{rep['name']})", p))

    realm_role_names = {x["fields"]["name"] for x in r["realm_roles"]}
    added_roles = set()
    for rep in builtins.realm_roles(name):
        if rep["name"] not in realm_role_names:
            r["realm_roles"].append(parse_role(rep, f"(built-in role {rep['name']})", p))
            added_roles.add(rep["name"])

    if r["default_role"] is None:
        # Keycloak < 13 kept a list of default roles; 13+ has one composite role.
        default = builtins.default_role(name)
        r["default_role"] = default["name"]
        role = next((x for x in r["realm_roles"] if x["fields"]["name"] == default["name"]), None)
        if role is None:
            role = parse_role({k: v for k, v in default.items() if k != "composites"},
                               "(built-in default role)", p)
            r["realm_roles"].append(role)
        comps = role["composites"]
        builtin_comps = default["composites"]
        wanted_realm = [x for x in builtin_comps["realm"] if x in added_roles]
        wanted_realm += r["default_roles_old"] or []
        wanted_client = {"account": builtin_comps["client"]["account"]} if "account" in added_clients else {}
        for client in r["clients"]:
            if client["default_roles_old"]:
                wanted_client.setdefault(client["fields"]["client_id"], []).extend(client["default_roles_old"])
        comps["realm"] += [x for x in wanted_realm if x not in comps["realm"]]
        for client_id, names in wanted_client.items():
            have = comps["client"].setdefault(client_id, [])
            have += [x for x in names if x not in have]

    for mapping in builtins.SCOPE_MAPPINGS:
        if mapping["clientScope"] in added_scopes:
            r["scope_mappings"].append(parse_scope_mapping(mapping, "(built-in scope mapping)", p))
    for owner, mappings in builtins.CLIENT_SCOPE_MAPPINGS.items():
        for mapping in mappings:
            if mapping["client"] in added_clients:
                r["client_scope_mappings"].setdefault(owner, []).append(
                    parse_scope_mapping(mapping, "(built-in client scope mapping)", p))
    merge_builtin_authentication(r)
