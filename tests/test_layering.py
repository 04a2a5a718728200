"""The import graph of the project's own packages, read with ``ast`` (nothing is imported): no
cycle between modules, and the layering of docs/architecture.md. Imports inside functions count
as much as those at the top: a lazy import that dodges a cycle is still the cycle."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("idp", "realms", "oidc", "saml", "federation", "webhooks", "ambassador")
APPS = ("idp", "realms", "oidc", "saml", "federation", "webhooks")
# importer package -> the other packages it may import; every other edge between them is refused
ALLOWED = {
    "realms": set(),  # realms knows no protocol
    "saml": {"realms"}, "federation": {"realms"}, "webhooks": {"realms"},  # no sibling edges but one:
    "oidc": {"realms", "webhooks"},  # the Shared Signals transmitter writes SETs into the webhook outbox
    "idp": {"realms", "oidc", "saml", "federation", "webhooks"},  # the project: settings, urls, commands
    "ambassador": set(),  # a separate process
}


def _modules():
    """{dotted module name: path} of every module of the packages (migrations left out)."""
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "migrations" in parts:
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _parse(source):
    # CPython 3.11 counts the AST constructor's depth per interpreter, not per thread: a traceback
    # formatted at the same moment in another thread (3.11 parses the failing line to place its
    # carets) makes ast.parse fail with a spurious SystemError (python/cpython#106905). The
    # source is sound; parse it again.
    try:
        return ast.parse(source)
    except SystemError:
        return ast.parse(source)


def _imported(module, path, modules):
    """The project modules ``module`` imports anywhere in its file (top level or in a function)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets = set()
    for node in ast.walk(_parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            # ``from pkg import name``: the module pkg.name when there is one, else pkg itself.
            names = [f"{source}.{alias.name}" for alias in node.names] + [source]
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
    return targets


def _graph():
    modules = _modules()
    return {module: _imported(module, path, modules) for module, path in modules.items()}


def _cycles(graph):
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.fixture(scope="module")
def graph():
    return _graph()


def test_the_walk_sees_function_level_imports(tmp_path):
    # A guard for the walker itself: an import inside a function is an edge.
    modules = {"pkg.a": tmp_path / "a.py", "pkg.b": tmp_path / "b.py"}
    modules["pkg.a"].write_text("def f():\n    from . import b\n")
    modules["pkg.b"].write_text("from .a import f\n")
    graph = {m: _imported(m, p, modules) for m, p in modules.items()}
    assert graph == {"pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}}
    assert _cycles(graph) == [["pkg.a", "pkg.b"]]


def test_no_import_cycles(graph):
    assert _cycles(graph) == []


def _between_packages(graph):
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if target.partition(".")[0] != module.partition(".")[0]
        and target.partition(".")[0] not in ALLOWED[module.partition(".")[0]]
    )


def test_layering(graph):
    assert _between_packages(graph) == []


def test_a_sibling_edge_is_refused():
    assert _between_packages({"oidc.x": {"federation.y"}, "webhooks.a": {"realms.b"}}) == ["oidc.x -> federation.y"]


def test_migrations_import_no_live_code():
    """A migration does tomorrow what it did when it was written: beside Django it names only the
    model fields and field defaults its operations refer to, never code whose behaviour may change
    (built-in definitions are frozen into its own data files)."""
    allowed = {f"{app}.models" for app in APPS} | {"realms.data.crypto"}
    wrong = []
    for path in sorted(ROOT.glob("*/migrations/*.py")):
        for node in ast.walk(_parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            wrong += [f"{path.relative_to(ROOT)}: {name}" for name in names
                      if name.partition(".")[0] in PACKAGES and name not in allowed]
    assert wrong == []


# The rooms of ``realms``, lowest first: a module may import its own room, a room on its layer or
# one below, never one above (docs/architecture.md; each package's docstring says what it owns).
REALMS_LAYERS = (
    # the tables and the code that reads and writes them; the error base; work after the request
    ("registry", "errors", "background", "features", "data", "models"),
    ("http",),  # protocol-neutral helpers: issuer, redirects, outbound calls, messages, e-mail
    ("credentials",),  # credential types, hashers, the password policy
    ("audit",),  # user and admin events
    ("sso", "purges"),  # SSO, client and authentication sessions; the periodic purges
    ("users",),  # user storage, creation, profile, required-action definitions, organizations
    ("signin",),  # the flow engine, steps, required actions, brute force, levels of authentication
    # admin permissions and flow rules, shared by the console and the API; identity brokering;
    # authorization services (resource servers' policies and their evaluation)
    ("administration", "brokering", "authz"),
    ("representation",),  # realm import and export, realm creation, the bootstrap admin
    ("admin", "admin_api", "account", "scim"),  # the surfaces: console, Admin REST API, account, SCIM
    ("apps", "urls", "tasks", "management", "templatetags", "kcadm"),  # wiring, commands, the CLI
)
_ROOM_LAYER = {room: i for i, rooms in enumerate(REALMS_LAYERS) for room in rooms}


def _room(module):
    return module.split(".")[1] if module.startswith("realms.") else None


def _upward(graph):
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items() if _room(module)
        for target in targets if _room(target)
        if _ROOM_LAYER[_room(target)] > _ROOM_LAYER[_room(module)]
    )


def test_every_room_of_realms_has_a_layer_and_says_what_it_owns(graph):
    rooms = {_room(module) for module in graph if _room(module)}
    assert rooms <= set(_ROOM_LAYER), sorted(rooms - set(_ROOM_LAYER))
    for room in rooms:
        package = ROOT / "realms" / room / "__init__.py"
        if package.exists():
            assert ast.get_docstring(_parse(package.read_text(encoding="utf-8"))), f"realms/{room} has no docstring"


def test_nothing_in_realms_points_upward(graph):
    assert _upward(graph) == []


def test_an_upward_edge_in_realms_is_refused():
    graph = {"realms.models.users": {"realms.credentials.password"}, "realms.signin.engine": {"realms.users.storage"}}
    assert _upward(graph) == ["realms.models.users -> realms.credentials.password"]


def test_no_module_is_over_600_lines():
    long = [f"{path.relative_to(ROOT)}: {n}" for path in sorted(ROOT.glob("*/**/*.py"))
            if "migrations" not in path.parts and ".venv" not in path.parts and "node_modules" not in path.parts
            and (n := len(path.read_text(encoding="utf-8").splitlines())) > 600]
    assert long == []
