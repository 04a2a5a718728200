"""Every user event the code emits is one of Keycloak's event types (org.keycloak.events.EventType,
``realms.audit.events.USER_EVENT_TYPES``): a name Keycloak does not have is missed by a realm's
``enabledEventTypes``, by webhook subscriptions and by every tool that reads Keycloak's events.

The names are read from the source: each call of ``emit`` or of a helper of the same module that
passes one of its parameters on as the type (found here, not listed); a name that is such a
parameter is checked at the helper's callers, a local variable through the strings assigned to it."""
import ast
from pathlib import Path

from oidc import grants
from realms.audit.events import USER_EVENT_TYPES
from realms.signin import views as signin_views
from webhooks import catalogue

ROOT = Path(__file__).resolve().parents[2]
APPS = ("realms", "oidc", "saml", "federation", "webhooks", "idp")

# The calls whose type is computed: the token endpoint's event per grant, or its error; the
# sign-in page's refusal by the realm's admission limits, per form.
COMPUTED = {("oidc/grants.py", "handle_token_request"):
            {grant.event + suffix for grant in grants.GRANT_TYPES.values() for suffix in ("", "_ERROR")},
            ("realms/signin/views.py", "authenticate"):
            {event for _, event in signin_views._ADMISSION.values()} | {"LOGIN_ERROR"}}


def _called_name(call):
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _is_admin_event(call):
    return any(k.arg == "kind" and isinstance(k.value, ast.Attribute) and k.value.attr == "ADMIN"
               for k in call.keywords)


def _assigned_strings(function, name):
    found = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                return None
            found.add(node.value.value)
    return found or None


def _calls(function):
    return [n for n in ast.walk(function) if isinstance(n, ast.Call) and not _is_admin_event(n)]


def _params(function):
    names = [a.arg for a in function.args.args]
    return names[1:] if names[:1] == ["self"] else names


def _forwarders(functions):
    """{name: position of the type} of ``emit`` and of the module's functions passing a parameter on to it."""
    found, changed = {"emit": 1}, True
    while changed:
        changed = False
        for function in functions:
            if function.name in found:
                continue
            params = _params(function)
            for call in _calls(function):
                position = found.get(_called_name(call))
                arg = call.args[position] if position is not None and len(call.args) > position else None
                if isinstance(arg, ast.Name) and arg.id in params:
                    found[function.name], changed = params.index(arg.id), True
                    break
    return found


def emitted_names():
    """{name: [where, ...]} of every event type the code emits; unresolved call sites fail here."""
    names, unresolved = {}, []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            rel = str(path.relative_to(ROOT))
            tree = ast.parse(path.read_text())
            functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
            forwarders = _forwarders(functions)
            for function in functions:
                for call in _calls(function):
                    position = forwarders.get(_called_name(call))
                    if position is None or len(call.args) <= position:
                        continue
                    arg, where = call.args[position], f"{rel}:{call.lineno}"
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        values = {arg.value}
                    elif isinstance(arg, ast.Name) and arg.id in _params(function) and function.name in forwarders:
                        continue  # a forwarding helper: its callers are checked
                    elif isinstance(arg, ast.Name) and _assigned_strings(function, arg.id):
                        values = _assigned_strings(function, arg.id)
                    elif (rel, function.name) in COMPUTED:
                        values = COMPUTED[(rel, function.name)]
                    else:
                        unresolved.append(where)
                        continue
                    for value in values:
                        names.setdefault(value, []).append(where)
    assert not unresolved, f"event types this test cannot read (pass a literal or extend COMPUTED): {unresolved}"
    return names


def test_every_emitted_user_event_is_a_keycloak_event_type():
    names = emitted_names()
    assert {"USER_INFO_REQUEST", "USER_INFO_REQUEST_ERROR", "CODE_TO_TOKEN_ERROR", "LOGOUT_ERROR"} <= set(names)
    unknown = {name: where for name, where in names.items() if name not in USER_EVENT_TYPES}
    assert not unknown, f"not Keycloak event types: {unknown}"


def test_the_webhook_catalogue_names_only_keycloak_event_types():
    assert set(catalogue.USER_EVENTS) <= set(USER_EVENT_TYPES), set(catalogue.USER_EVENTS) - set(USER_EVENT_TYPES)


def test_the_webhook_catalogue_offers_only_events_the_code_emits():
    """A subscription to an event nothing emits would wait for ever: the catalogue lists only
    events some code path writes."""
    never = set(catalogue.USER_EVENTS) - set(emitted_names())
    assert not never, f"in the webhook catalogue but emitted nowhere: {sorted(never)}"
