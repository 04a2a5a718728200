"""The admin CLI, ``kcadm.sh`` as Keycloak ships it: an HTTP client of the Admin REST API with the
sign-in done for it (``config credentials``), four verbs that map to HTTP methods
(``create``/``get``/``update``/``delete ENDPOINT``) and the shortcuts scripts use
(``get-roles``, ``add-roles``, ``remove-roles``, ``set-password``).

It imports nothing of Django: it talks HTTP to a server like any other client, so it runs on an
operator's machine as well as beside the server (docs/decisions/0033-admin-cli.md). Installed as
``kcadm.sh`` (so a team's existing scripts run unchanged) and ``kcadm``.
"""
import argparse
import getpass
import json
import sys
import traceback

from .client import DEFAULT_CONFIG, CliError, Config, Connection
from .output import as_csv, merge, parse_fields, pretty, select, set_attribute


def _common(parser):
    auth = parser.add_argument_group("connection (override the config file's)")
    auth.add_argument("--config", help=f"config file (default {DEFAULT_CONFIG})")
    auth.add_argument("--no-config", action="store_true", help="sign in for this command only, store nothing")
    auth.add_argument("--server", help="server base URL, e.g. http://localhost:8080")
    auth.add_argument("--realm", help="realm to sign in to (not the realm to act on: that is -r)")
    auth.add_argument("--user", help="user name to sign in as")
    auth.add_argument("--password", help="password (prompted for when --user is given without it)")
    auth.add_argument("--client", help="client id to sign in with (default admin-cli)")
    auth.add_argument("--secret", help="client secret (for a confidential client or a service account)")
    auth.add_argument("--truststore", help="PEM file of the CA certificates to trust for https")
    parser.add_argument("-r", "--target-realm", help="realm to act on (default: the realm signed in to)")
    parser.add_argument("-x", action="store_true", dest="trace", help="print the full stack trace on error")


def _body_options(parser):
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                        help="set an attribute (a.b[0]=value; JSON values as JSON)")
    parser.add_argument("-f", "--file", help="JSON body from a file, or - for standard input")


def _output_options(parser):
    parser.add_argument("--fields", help="only these fields, e.g. id,username,attributes(dept)")
    parser.add_argument("--format", choices=("json", "csv"), default="json")
    parser.add_argument("-c", "--compressed", action="store_true", help="JSON on one line")
    parser.add_argument("--noquotes", action="store_true", help="CSV without quotes")
    parser.add_argument("-H", "--print-headers", action="store_true", help="CSV with a header row")


def _target_options(parser, *, role_target=True):
    who = parser.add_argument_group("whose roles")
    who.add_argument("--uusername", help="a user, by user name")
    who.add_argument("--uid", help="a user, by id")
    who.add_argument("--gname", help="a group, by name")
    who.add_argument("--gpath", help="a group, by path (/parent/child)")
    who.add_argument("--gid", help="a group, by id")
    if role_target:
        who.add_argument("--rname", help="a composite realm role, by name")
        who.add_argument("--rid", help="a composite role, by id")
    parser.add_argument("--cclientid", help="client roles of this client (by clientId)")
    parser.add_argument("--cid", help="client roles of this client (by id)")
    parser.add_argument("--rolename", action="append", default=[], help="a role, by name (repeatable)")
    parser.add_argument("--roleid", action="append", default=[], help="a role, by id (repeatable)")


def build_parser():
    parser = argparse.ArgumentParser(prog="kcadm.sh", description="Admin CLI for the Admin REST API, as Keycloak's kcadm.sh.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    config = commands.add_parser("config", help="sign in and other settings kept in the config file")
    config_commands = config.add_subparsers(dest="config_command", required=True, metavar="SUBCOMMAND")
    credentials = config_commands.add_parser("credentials", help="sign in and keep the tokens")
    _common(credentials)
    truststore = config_commands.add_parser("truststore", help="the CA certificates to trust for https")
    truststore.add_argument("file", nargs="?", help="PEM file")
    truststore.add_argument("-d", "--delete", action="store_true", help="forget the truststore")
    truststore.add_argument("--config")

    for verb, text in (("create", "POST to an endpoint"), ("get", "GET an endpoint"),
                       ("update", "PUT to an endpoint"), ("delete", "DELETE an endpoint")):
        sub = commands.add_parser(verb, help=text)
        sub.add_argument("endpoint", help="e.g. users, realms/demo, clients/ID/roles, or a full URL")
        _common(sub)
        if verb != "delete":
            sub.add_argument("-q", "--query", action="append", default=[], metavar="NAME=VALUE",
                             help="a query parameter (repeatable)")
        if verb in ("create", "update"):
            _body_options(sub)
            sub.add_argument("-o", "--output", action="store_true", help="print the resource after the change")
            _output_options(sub)
        if verb == "create":
            sub.add_argument("-i", "--id", action="store_true", help="print only the new resource's id")
        if verb == "update":
            sub.add_argument("-n", "--no-merge", action="store_true",
                             help="send only what is given (default: merge into the current resource)")
        if verb == "get":
            sub.add_argument("--offset", type=int, help="first result (the API's first=)")
            sub.add_argument("--limit", type=int, help="most results (the API's max=)")
            _output_options(sub)

    get_roles = commands.add_parser("get-roles", help="list roles, or the roles of a user, group or composite role")
    _common(get_roles)
    _target_options(get_roles)
    get_roles.add_argument("--effective", action="store_true", help="with composites expanded")
    get_roles.add_argument("--available", action="store_true", help="the roles that could still be added")
    get_roles.add_argument("--all", action="store_true", help="realm and client roles together")
    _output_options(get_roles)
    for verb, text in (("add-roles", "give roles"), ("remove-roles", "take roles away")):
        sub = commands.add_parser(verb, help=f"{text} to a user, group or composite role")
        _common(sub)
        _target_options(sub)

    password = commands.add_parser("set-password", help="set a user's password")
    _common(password)
    password.add_argument("--username", help="the user, by user name")
    password.add_argument("--userid", help="the user, by id")
    password.add_argument("--new-password", help="the password (prompted for when not given)")
    password.add_argument("-t", "--temporary", action="store_true", help="the user must change it at next sign-in")
    return parser


# -- connection -----------------------------------------------------------------------------------

def _password(args, prompt="Enter password: "):
    if args.password is None and args.user:
        args.password = getpass.getpass(prompt)
    return args.password


def _login(conn, args):
    who = f"user {args.user}" if args.user else f"service-account-{args.client}"
    print(f"Logging into {conn.server} as {who} of realm {conn.realm}", file=sys.stderr)
    conn.login(client_id=args.client or "admin-cli", user=args.user, password=_password(args), secret=args.secret)


def connect(args):
    if args.no_config:
        conn = Connection(args.server, args.realm, {}, truststore=args.truststore)
        _login(conn, args)
        return conn
    config = Config(args.config or DEFAULT_CONFIG)
    server = args.server or config.data.get("serverUrl")
    realm = args.realm or config.data.get("realm")
    tokens = config.session(server, realm) if server and realm else {}
    conn = Connection(server, realm, tokens, truststore=args.truststore or config.data.get("truststore"),
                      on_change=config.save)
    if args.user or args.secret:
        _login(conn, args)
    return conn


def config_credentials(args):
    if not args.server or not args.realm:
        raise CliError("Required options: --server and --realm")
    if not args.user and not (args.client and args.secret):
        raise CliError("Required: --user (with --password), or --client with --secret")
    config = Config(args.config or DEFAULT_CONFIG)
    conn = Connection(args.server, args.realm, config.session(args.server.rstrip("/"), args.realm),
                      truststore=args.truststore or config.data.get("truststore"))
    _login(conn, args)
    config.data.update(serverUrl=conn.server, realm=conn.realm)
    if args.truststore:
        config.data["truststore"] = args.truststore
    config.save()


def config_truststore(args):
    config = Config(args.config or DEFAULT_CONFIG)
    if args.delete:
        config.data.pop("truststore", None)
    elif args.file:
        config.data["truststore"] = args.file
    else:
        raise CliError("Give a PEM file, or --delete")
    config.save()


# -- output ---------------------------------------------------------------------------------------

def show(args, value):
    value = select(value, parse_fields(args.fields) if args.fields else None)
    if args.format == "csv":
        text = as_csv(value, quotes=not args.noquotes, header=args.print_headers)
    elif args.compressed:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    else:
        text = pretty(value)
    if text:
        print(text)


def _pairs(items, option):
    pairs = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise CliError(f"Invalid {option} argument (expected name=value): {item}")
        pairs.append((name, value))
    return pairs


def _body(args):
    body = {}
    if args.file:
        try:
            text = sys.stdin.read() if args.file == "-" else open(args.file, encoding="utf-8").read()
            body = json.loads(text)
        except OSError as exc:
            raise CliError(f"Failed to read file {args.file}: {exc.strerror}") from None
        except ValueError as exc:
            raise CliError(f"Not a valid JSON document ({args.file}): {exc}") from None
    if args.set:
        if not isinstance(body, dict):
            raise CliError("-s applies to an object; the file holds something else")
        for assignment in args.set:
            set_attribute(body, assignment)
    return body


def _resource_type(endpoint):
    last = endpoint.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return last[:-1] if last.endswith("s") else last


# -- commands -------------------------------------------------------------------------------------

def create(args, conn):
    url = conn.url(args.endpoint, args.target_realm)
    response = conn.request("POST", url, params=_pairs(args.query, "-q"), body=_body(args))
    location = response.headers.get("Location", "")
    new_id = location.rstrip("/").rsplit("/", 1)[-1] if location else ""
    if args.id:
        print(new_id)
    elif args.output:
        show(args, conn.request("GET", location).json() if location else response.json())
    elif new_id:
        print(f"Created new {_resource_type(args.endpoint)} with id '{new_id}'", file=sys.stderr)


def get(args, conn):
    params = _pairs(args.query, "-q")
    if args.offset is not None:
        params.append(("first", str(args.offset)))
    if args.limit is not None:
        params.append(("max", str(args.limit)))
    response = conn.request("GET", conn.url(args.endpoint, args.target_realm), params=params)
    if "json" in response.headers.get("Content-Type", ""):
        show(args, response.json())
    else:
        sys.stdout.write(response.text)


def update(args, conn):
    url = conn.url(args.endpoint, args.target_realm)
    body = _body(args)
    if not args.no_merge and isinstance(body, dict):
        body = merge(conn.request("GET", url).json(), body)
    conn.request("PUT", url, params=_pairs(args.query, "-q"), body=body)
    if args.output:
        show(args, conn.request("GET", url).json())


def delete(args, conn):
    conn.request("DELETE", conn.url(args.endpoint, args.target_realm))


class _Api:
    """Lookups by name the shortcut commands need, in the target realm."""

    def __init__(self, conn, realm):
        self.conn, self.realm = conn, realm

    def get(self, endpoint, **params):
        return self.conn.request("GET", self.conn.url(endpoint, self.realm), params=params or None).json()

    def send(self, method, endpoint, body=None):
        self.conn.request(method, self.conn.url(endpoint, self.realm), body=body)

    def user_id(self, username):
        found = [u for u in self.get("users", username=username, exact="true")
                 if u["username"] == username.lower()]
        if not found:
            raise CliError(f"User not found for username: {username}")
        return found[0]["id"]

    def group_id(self, name):
        def walk(groups):
            for group in groups:
                yield group
                yield from walk(group.get("subGroups") or [])
        found = [g for g in walk(self.get("groups", search=name, exact="true")) if g["name"] == name]
        if len(found) != 1:
            raise CliError(f"Group not found for name: {name}" if not found
                           else f"More than one group named {name}: use --gpath or --gid")
        return found[0]["id"]

    def client_id(self, client_id):
        found = [c for c in self.get("clients", clientId=client_id) if c["clientId"] == client_id]
        if not found:
            raise CliError(f"Client not found for clientId: {client_id}")
        return found[0]["id"]


def _client_uuid(api, args):
    return args.cid or (api.client_id(args.cclientid) if args.cclientid else None)


def _owner(api, args):
    """The endpoint below which the target's role mappings (or composites) live, or None."""
    if args.uusername or args.uid:
        return f"users/{args.uid or api.user_id(args.uusername)}/role-mappings"
    if args.gname or args.gpath or args.gid:
        gid = args.gid or (api.get(f"group-by-path/{args.gpath.strip('/')}")["id"] if args.gpath
                           else api.group_id(args.gname))
        return f"groups/{gid}/role-mappings"
    if getattr(args, "rname", None) or getattr(args, "rid", None):
        role = api.get(f"roles-by-id/{args.rid}") if args.rid else api.get(f"roles/{args.rname}")
        container = f"clients/{role['containerId']}/roles" if role.get("clientRole") else "roles"
        return f"{container}/{role['name']}/composites"
    return None


def _roles(api, args, client_uuid):
    if not args.rolename and not args.roleid:
        raise CliError("No role to add or remove: give --rolename or --roleid")
    container = f"clients/{client_uuid}/roles" if client_uuid else "roles"
    return ([api.get(f"{container}/{name}") for name in args.rolename]
            + [api.get(f"roles-by-id/{rid}") for rid in args.roleid])


def get_roles(args, conn):
    api = _Api(conn, args.target_realm)
    owner, client_uuid = _owner(api, args), _client_uuid(api, args)
    if owner is None:
        container = f"clients/{client_uuid}/roles" if client_uuid else "roles"
        if args.rolename or args.roleid:
            show(args, _roles(api, args, client_uuid)[0])
        else:
            show(args, api.get(container))
        return
    if owner.endswith("/composites"):
        roles = api.get(owner)
        show(args, [r for r in roles if args.all or (r.get("containerId") == client_uuid if client_uuid
                                                     else not r.get("clientRole"))])
        return
    if args.all:
        show(args, api.get(owner))
        return
    path = f"{owner}/clients/{client_uuid}" if client_uuid else f"{owner}/realm"
    if args.effective:
        path += "/composite"
    elif args.available:
        path += "/available"
    roles = api.get(path)
    if args.rolename:
        roles = [r for r in roles if r["name"] in args.rolename]
    show(args, roles)


def _change_roles(args, conn, method):
    api = _Api(conn, args.target_realm)
    owner = _owner(api, args)
    if owner is None:
        raise CliError("No one to give roles to: use --uusername, --uid, --gname, --gpath, --gid, --rname or --rid")
    client_uuid = _client_uuid(api, args)
    roles = _roles(api, args, client_uuid)
    if not owner.endswith("/composites"):
        owner = f"{owner}/clients/{client_uuid}" if client_uuid else f"{owner}/realm"
    api.send(method, owner, roles)


def set_password(args, conn):
    if not args.username and not args.userid:
        raise CliError("Give the user: --username or --userid")
    api = _Api(conn, args.target_realm)
    user_id = args.userid or api.user_id(args.username)
    new = args.new_password if args.new_password is not None else getpass.getpass("Enter password: ")
    api.send("PUT", f"users/{user_id}/reset-password", {"type": "password", "value": new, "temporary": args.temporary})


COMMANDS = {
    "create": create, "get": get, "update": update, "delete": delete, "get-roles": get_roles,
    "add-roles": lambda args, conn: _change_roles(args, conn, "POST"),
    "remove-roles": lambda args, conn: _change_roles(args, conn, "DELETE"),
    "set-password": set_password,
}


def _glue_values(parser, argv):
    """``--secret -x1`` and ``-s -1`` are values, not options: client secrets and numbers may start
    with a dash, which argparse would take for an option unless the value is glued on."""
    takes_value = set()
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    stack = [p for action in subparsers for p in action.choices.values()]
    while stack:
        sub = stack.pop()
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(action.choices.values())
            elif action.option_strings and action.nargs != 0:
                takes_value.update(action.option_strings)
    glued, args = [], iter(argv)
    for arg in args:
        value = next(args, None) if arg in takes_value else None
        if value is None:
            glued.append(arg)
        else:
            glued.append(f"{arg}={value}" if arg.startswith("--") else arg + value)
    return glued


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(_glue_values(parser, sys.argv[1:] if argv is None else argv))
    try:
        if args.command == "config":
            (config_credentials if args.config_command == "credentials" else config_truststore)(args)
        else:
            COMMANDS[args.command](args, connect(args))
    except CliError as exc:
        if getattr(args, "trace", False):
            traceback.print_exc()
        print(exc, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
