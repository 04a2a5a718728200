"""Authentication: the realm's flows (``authenticationFlows``), their executions' settings
(``authenticatorConfig``) and its required actions (``requiredActions``), as Keycloak's
RealmRepresentation has them. The flow bindings are realm fields (realm.py); clients'
``authenticationFlowBindingOverrides`` name flows by id, renumbered here when a flow gets a new id.

Keycloak 26's built-in flows and required actions (``realms.signin.flows``) are the seed: a file
without ``authenticationFlows`` gets all of them, one with its own gets the built-in top-level
flows it lacks (by alias, as Keycloak's migrateFlows), a file without ``requiredActions`` gets
the built-in ones."""
from ..models import AuthenticationExecution, AuthenticationFlow, AuthenticatorConfig, Client, RequiredActionProvider
from ..signin import flows
from ..users import actions
from .fields import RepresentationError, as_bool, as_int, as_list, as_str, as_str_map, at

# Realm keys naming the flow of each binding (values are aliases).
BINDING_KEYS = {
    "browserFlow": "browser_flow", "registrationFlow": "registration_flow", "directGrantFlow": "direct_grant_flow",
    "resetCredentialsFlow": "reset_credentials_flow", "clientAuthenticationFlow": "client_authentication_flow",
    "dockerAuthenticationFlow": "docker_authentication_flow", "firstBrokerLoginFlow": "first_broker_login_flow",
}
KEYS = ("authenticationFlows", "authenticatorConfig", "requiredActions")
FLOW_PROVIDERS = {p for p, _ in AuthenticationFlow.PROVIDERS}
REQUIREMENTS = {r for r, _ in AuthenticationExecution.REQUIREMENTS}

_FLOW = {"id": as_str, "alias": as_str, "description": as_str, "providerId": as_str, "topLevel": as_bool,
         "builtIn": as_bool, "authenticationExecutions": as_list}
_EXECUTION = {"authenticator": as_str, "authenticatorFlow": as_bool, "autheticatorFlow": as_bool,
              "requirement": as_str, "priority": as_int, "flowAlias": as_str, "authenticatorConfig": as_str,
              "userSetupAllowed": as_bool}
_CONFIG = {"id": as_str, "alias": as_str, "config": as_str_map}
_ACTION = {"alias": as_str, "name": as_str, "providerId": as_str, "enabled": as_bool, "defaultAction": as_bool,
           "priority": as_int, "config": as_str_map}


# Parse ---------------------------------------------------------------------------------------

def parse_execution(data, path, p):
    e = p.take(data, path, _EXECUTION, derived={"id", "parentFlow"})
    requirement = e.get("requirement", AuthenticationExecution.DISABLED)
    if requirement not in REQUIREMENTS:
        raise RepresentationError(at(path, "requirement"), f"expected one of {', '.join(sorted(REQUIREMENTS))}")
    is_flow = e.get("authenticatorFlow", e.get("autheticatorFlow", False))
    if is_flow and not e.get("flowAlias"):
        raise RepresentationError(at(path, "flowAlias"), "required for a sub-flow")
    if not is_flow and not e.get("authenticator"):
        raise RepresentationError(at(path, "authenticator"), "required")
    return {"_path": path, "authenticator": e.get("authenticator", ""), "flow_alias": e["flowAlias"] if is_flow else "",
            "requirement": requirement, "priority": e.get("priority", 0),
            "config_alias": e.get("authenticatorConfig", ""),
            "user_setup_allowed": e.get("userSetupAllowed", False)}


def _alias(value, path):
    if len(value) > 255:
        raise RepresentationError(at(path, "alias"), "longer than 255 characters")
    return value


def parse_flow(data, path, p):
    f = p.take(data, path, _FLOW, required=("alias",))
    _alias(f["alias"], path)
    provider = f.get("providerId", AuthenticationFlow.BASIC)
    if provider not in FLOW_PROVIDERS:
        raise RepresentationError(at(path, "providerId"), f"expected one of {', '.join(sorted(FLOW_PROVIDERS))}")
    return {"_path": path, "id": f.get("id"), "alias": f["alias"], "description": f.get("description", ""),
            "provider_id": provider, "top_level": f.get("topLevel", True), "built_in": f.get("builtIn", False),
            "executions": [parse_execution(e, f"{path}.authenticationExecutions[{i}]", p)
                           for i, e in enumerate(f.get("authenticationExecutions", []))]}


def parse_config(data, path, p):
    c = p.take(data, path, _CONFIG, required=("alias",))
    _alias(c["alias"], path)
    return {"_path": path, "id": c.get("id"), "alias": c["alias"], "config": c.get("config", {})}


def parse_required_action(data, path, p):
    a = p.take(data, path, _ACTION, required=("alias",))
    _alias(a["alias"], path)
    return {"_path": path, "alias": a["alias"], "name": a.get("name", a["alias"]),
            "provider_id": a.get("providerId", a["alias"]), "enabled": a.get("enabled", False),
            "default_action": a.get("defaultAction", False), "priority": a.get("priority", 0),
            "config": a.get("config", {})}


def parse_authentication(top, p):
    """The file's authentication parts; None for a key the file lacks (built-ins fill it)."""
    def each(key, parse):
        if key not in top:
            return None
        return [parse(x, f"{key}[{i}]", p) for i, x in enumerate(as_list(top[key], key))]

    out = {"flows": each("authenticationFlows", parse_flow), "configs": each("authenticatorConfig", parse_config),
           "required_actions": each("requiredActions", parse_required_action)}
    for _key, items in (("flows", out["flows"]), ("configs", out["configs"]),
                       ("required_actions", out["required_actions"])):
        seen = set()
        for item in items or ():
            if item["alias"] in seen:
                raise RepresentationError(at(item["_path"], "alias"), f"duplicate {item['alias']!r}")
            seen.add(item["alias"])
    return out


# Built-ins -----------------------------------------------------------------------------------

def _flow_tree(flow, realm_name, top_level, flows_out, configs_out):
    executions = []
    for execution in flow.executions:
        if execution.flow is not None and execution.flow.alias in flows.ORGANIZATION_FLOWS and realm_name == "master":
            continue  # Keycloak leaves the organization flows out of the master realm
        rep = {"authenticator": execution.authenticator, "flow_alias": "", "requirement": execution.requirement,
               "priority": execution.priority, "config_alias": execution.config_alias, "user_setup_allowed": False,
               "_path": f"(built-in flow {flow.alias})"}
        if execution.config_alias:
            configs_out.append({"_path": f"(built-in config {execution.config_alias})", "id": None,
                                "alias": execution.config_alias, "config": dict(execution.config)})
        if execution.flow is not None:
            rep["flow_alias"] = execution.flow.alias
            _flow_tree(execution.flow, realm_name, False, flows_out, configs_out)
        executions.append(rep)
    flows_out.append({"_path": f"(built-in flow {flow.alias})", "id": None, "alias": flow.alias,
                      "description": flow.description, "provider_id": flow.provider_id, "top_level": top_level,
                      "built_in": True, "executions": executions})


def builtin_flows(realm_name):
    """{top-level alias: (flows, configs)}: each built-in flow with its sub-flows and configs, as
    parsed representations."""
    out = {}
    for flow in flows.BUILTIN_FLOWS:
        flows_out, configs_out = [], []
        _flow_tree(flow, realm_name, True, flows_out, configs_out)
        out[flow.alias] = (flows_out, configs_out)
    return out


def builtin_required_actions():
    last = len(flows.BUILTIN_REQUIRED_ACTIONS) - 1
    return [{"_path": f"(built-in required action {alias})", "alias": alias, "name": name, "provider_id": alias,
             "enabled": enabled, "default_action": False, "priority": 1000 if i == last else (i + 1) * 10,
             "config": {}}
            for i, (alias, name, enabled) in enumerate(flows.BUILTIN_REQUIRED_ACTIONS)]


def merge_builtin_authentication(r):
    auth = r["authentication"]
    auth["flows"] = auth["flows"] or []
    auth["configs"] = auth["configs"] or []
    flow_aliases = {f["alias"] for f in auth["flows"]}
    config_aliases = {c["alias"] for c in auth["configs"]}
    for alias, (tree, configs) in builtin_flows(r["name"]).items():
        if alias in flow_aliases:
            continue
        auth["flows"] += [f for f in tree if f["alias"] not in flow_aliases]
        auth["configs"] += [c for c in configs if c["alias"] not in config_aliases]
        flow_aliases |= {f["alias"] for f in tree}
        config_aliases |= {c["alias"] for c in configs}
    if auth["required_actions"] is None:
        auth["required_actions"] = builtin_required_actions()


# Apply ---------------------------------------------------------------------------------------

class AuthenticationApplier:
    """Import steps: flows, configs and required actions right after the realm; the clients'
    overrides once the clients exist."""

    def add_authentication(self):
        auth = self.r["authentication"]
        realm = self.realm
        # Bulk writes: the realm's own save already dropped its cached configuration.
        configs = {c["alias"]: AuthenticatorConfig(id=self.id_for(AuthenticatorConfig, c["id"]), realm=realm,
                                                   alias=c["alias"], config=c["config"]) for c in auth["configs"]}
        AuthenticatorConfig.objects.bulk_create(configs.values())
        self.flow_ids = {}
        by_alias = {}
        for f in auth["flows"]:
            by_alias[f["alias"]] = row = AuthenticationFlow(
                id=self.id_for(AuthenticationFlow, f["id"]), realm=realm, alias=f["alias"],
                description=f["description"], provider_id=f["provider_id"], top_level=f["top_level"],
                built_in=f["built_in"])
            if f["id"]:
                self.flow_ids[f["id"]] = row.pk
        AuthenticationFlow.objects.bulk_create(by_alias.values())
        rows = []
        for f in auth["flows"]:
            for e in f["executions"]:
                sub = by_alias.get(e["flow_alias"]) if e["flow_alias"] else None
                if e["flow_alias"] and sub is None:
                    raise RepresentationError(at(e["_path"], "flowAlias"), f"no flow {e['flow_alias']!r}")
                config = configs.get(e["config_alias"]) if e["config_alias"] else None
                if e["config_alias"] and config is None:
                    raise RepresentationError(at(e["_path"], "authenticatorConfig"),
                                              f"no authenticator config {e['config_alias']!r}")
                self._report_unavailable(f, e)
                rows.append(AuthenticationExecution(
                    realm=realm, flow=by_alias[f["alias"]], authenticator=e["authenticator"], sub_flow=sub,
                    requirement=e["requirement"], priority=e["priority"], authenticator_config=config,
                    user_setup_allowed=e["user_setup_allowed"]))
        AuthenticationExecution.objects.bulk_create(rows)
        for key, field_name in BINDING_KEYS.items():
            alias = getattr(realm, field_name)
            if alias not in by_alias:
                raise RepresentationError(key, f"no authentication flow {alias!r}")
        for a in auth["required_actions"]:
            self._report_unavailable_action(a)
        RequiredActionProvider.objects.bulk_create([RequiredActionProvider(
            realm=realm, alias=a["alias"], name=a["name"], provider_id=a["provider_id"], enabled=a["enabled"],
            default_action=a["default_action"], priority=a["priority"], config=a["config"],
        ) for a in auth["required_actions"]])

    def _report_unavailable(self, flow, execution):
        # Only the file's own flows are reported (a built-in's missing steps are documented), and
        # not client flows: client authentication is the protocol's, not a sign-in step.
        name = execution["authenticator"]
        if flow["_path"].startswith("(built-in") or flow["provider_id"] == AuthenticationFlow.CLIENT:
            return
        if name and not execution["flow_alias"] and execution["requirement"] != AuthenticationExecution.DISABLED \
                and flows.get_authenticator(name) is None:
            self.p.unsupported(at(execution["_path"], "authenticator"),
                               f"{name!r} is not available on this server: imported, the step fails closed at sign-in")

    def _report_unavailable_action(self, action):
        # The file's enabled actions only: a disabled one is never asked for.
        if action["enabled"] and not action["_path"].startswith("(built-in") \
                and actions.get_required_action(action["provider_id"]) is None:
            self.p.unsupported(at(action["_path"], "providerId"),
                               f"{action['provider_id']!r} is not available on this server: imported, its rules "
                               "are not evaluated at sign-in, and a user it is asked of cannot sign in")

    def remap_flow_overrides(self):
        """Clients' overrides name flows by id; a flow that got a new id (its id was taken) is
        renamed in them. An override naming no flow of the file is an error, as in Keycloak."""
        known = set(self.flow_ids.values())
        for client_rep in self.r["clients"]:
            overrides = client_rep["fields"].get("authentication_flow_binding_overrides") or {}
            if not overrides:
                continue
            mapped = {}
            for binding, flow_id in overrides.items():
                new = self.flow_ids.get(flow_id, flow_id if flow_id in known else None)
                if new is None:
                    raise RepresentationError(at(client_rep["_path"], f"authenticationFlowBindingOverrides.{binding}"),
                                              f"no authentication flow with id {flow_id!r}")
                mapped[binding] = new
            if mapped != overrides:
                Client.objects.filter(realm=self.realm, client_id=client_rep["fields"]["client_id"]).update(
                    authentication_flow_binding_overrides=mapped)


# Export --------------------------------------------------------------------------------------

def execution_rep(e):
    rep = {}
    if e.authenticator_config_id:
        rep["authenticatorConfig"] = e.authenticator_config.alias
    if e.authenticator:
        rep["authenticator"] = e.authenticator
    is_flow = e.sub_flow_id is not None
    rep.update({"authenticatorFlow": is_flow, "requirement": e.requirement, "priority": e.priority,
                "autheticatorFlow": is_flow})
    if is_flow:
        rep["flowAlias"] = e.sub_flow.alias
    rep["userSetupAllowed"] = e.user_setup_allowed
    return rep


def flow_rep(flow, executions):
    rep = {"id": flow.pk, "alias": flow.alias}
    if flow.description:
        rep["description"] = flow.description
    rep.update({"providerId": flow.provider_id, "topLevel": flow.top_level, "builtIn": flow.built_in,
                "authenticationExecutions": [execution_rep(e) for e in executions]})
    return rep


def config_rep(config):
    return {"id": config.pk, "alias": config.alias, "config": dict(config.config)}


def required_action_rep(action):
    return {"alias": action.alias, "name": action.name, "providerId": action.provider_id, "enabled": action.enabled,
            "defaultAction": action.default_action, "priority": action.priority, "config": dict(action.config)}


def authentication_reps(realm):
    """The export's ``authenticationFlows``, ``authenticatorConfig`` and ``requiredActions``."""
    executions = {}
    for e in AuthenticationExecution.objects.filter(realm=realm).select_related("sub_flow", "authenticator_config"):
        executions.setdefault(e.flow_id, []).append(e)
    return {
        "authenticationFlows": [flow_rep(f, sorted(executions.get(f.pk, ()), key=lambda e: (e.priority, e.pk)))
                                for f in AuthenticationFlow.objects.filter(realm=realm).order_by("alias")],
        "authenticatorConfig": [config_rep(c) for c in AuthenticatorConfig.objects.filter(realm=realm)
                                .order_by("alias")],
        "requiredActions": [required_action_rep(a) for a in RequiredActionProvider.objects.filter(realm=realm)],
    }
