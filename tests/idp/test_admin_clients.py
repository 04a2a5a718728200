"""Keycloak's own admin client for Python (python-keycloak's KeycloakAdmin) runs a script of
calls against ``start_dev`` (a real server in a subprocess), with assertions on every answer."""
import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
import requests
from keycloak import KeycloakAdmin, KeycloakOpenID
from keycloak.exceptions import KeycloakError, KeycloakGetError, KeycloakPostError

from .test_modes import ROOT, base_env, free_port, manage, stop, wait_for

ADMIN, ADMIN_PASSWORD = "boot", "boot-pass-1"


@pytest.fixture(scope="module", params=["start_dev", "start"])
def server(request, tmp_path_factory):
    """The server as an operator runs it: ``start_dev`` (SQLite) or ``start`` (production:
    Granian, PostgreSQL, Redis), with a bootstrap admin."""
    http, mgmt = free_port(), free_port()
    var = str(tmp_path_factory.mktemp("var"))
    boot = {"IDP_BOOTSTRAP_ADMIN_USERNAME": ADMIN, "IDP_BOOTSTRAP_ADMIN_PASSWORD": ADMIN_PASSWORD, "IDP_VAR_DIR": var}
    database = None
    if request.param == "start_dev":
        env = base_env(DJANGO_SETTINGS_MODULE="idp.settings.dev", **boot)
        args = ()
    else:
        database = f"admin_clients_{os.getpid()}"
        admin_url = os.environ["IDP_TEST_DB_URL"]
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}"')
            conn.execute(f'CREATE DATABASE "{database}"')
        env = base_env(DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_HOSTNAME="127.0.0.1",
                       IDP_BASE_URL=f"http://127.0.0.1:{http}", IDP_SECRET_KEY="z" * 50,
                       IDP_DB_URL=admin_url.rsplit("/", 1)[0] + "/" + database,
                       IDP_REDIS_URL=os.environ["IDP_TEST_REDIS_URL"], **boot)
        args = ("--bind", "127.0.0.1", "--workers", "2")
    proc = manage(request.param, "--http-port", str(http), "--management-port", str(mgmt), *args, env=env)
    try:
        wait_for(f"http://127.0.0.1:{mgmt}/health/ready", deadline_s=90, proc=proc)
        # Ready is the management server's answer; Granian's workers may still be starting.
        wait_for(f"http://127.0.0.1:{http}/realms/master/.well-known/openid-configuration", deadline_s=90, proc=proc)
        # The address the server listens on, not "localhost": Debian's /etc/hosts gives ::1 first,
        # and Node.js 18 tries only the first address.
        yield f"http://127.0.0.1:{http}/"
    finally:
        stop(proc)
        if database is not None:
            with psycopg.connect(os.environ["IDP_TEST_DB_URL"], autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def test_python_keycloak_admin_script(server):
    master = KeycloakAdmin(server_url=server, username=ADMIN, password=ADMIN_PASSWORD, realm_name="master",
                           user_realm_name="master")
    info = master.get_server_info()
    assert info["systemInfo"]["version"].startswith("26.")
    assert "master" in [r["realm"] for r in master.get_realms()]

    master.create_realm({"realm": "pyk", "enabled": True})
    assert master.get_realm("pyk")["realm"] == "pyk"
    with pytest.raises(KeycloakPostError) as exc:
        master.create_realm({"realm": "pyk", "enabled": True})
    assert exc.value.response_code == 409
    master.create_realm({"realm": "pyk"}, skip_exists=True)  # the 409 is what skip_exists recognises

    admin = KeycloakAdmin(server_url=server, username=ADMIN, password=ADMIN_PASSWORD, realm_name="pyk",
                          user_realm_name="master")
    client_uuid = admin.create_client({"clientId": "backend", "publicClient": False, "serviceAccountsEnabled": True,
                                       "directAccessGrantsEnabled": True})
    assert admin.get_client_id("backend") == client_uuid
    secret = admin.get_client_secrets(client_uuid)
    assert secret["type"] == "secret" and secret["value"]
    regenerated = admin.generate_client_secrets(client_uuid)
    assert regenerated["value"] != secret["value"]
    assert admin.get_client_service_account_user(client_uuid)["username"] == "service-account-backend"
    admin.create_client_role(client_uuid, {"name": "reader"})
    assert admin.get_client_role(client_uuid, "reader")["clientRole"] is True

    assert admin.create_realm_role({"name": "editor", "description": "edits"}) == "editor"
    assert admin.get_realm_role("editor")["description"] == "edits"
    group_id = admin.create_group({"name": "staff"})
    sub_id = admin.create_group({"name": "ops"}, parent=group_id)
    assert admin.get_group_by_path("/staff/ops")["id"] == sub_id

    user_id = admin.create_user({"username": "Alice", "email": "alice@example.org", "enabled": True,
                                 "firstName": "Alice", "attributes": {"dept": ["ops"]}})
    assert admin.create_user({"username": "alice"}, exist_ok=True) == user_id
    with pytest.raises(KeycloakPostError) as exc:
        admin.create_user({"username": "alice"})
    assert exc.value.response_code == 409 and b"User exists with same username" in exc.value.response_body
    admin.create_user({"username": "bob", "email": "bob@example.org", "enabled": True})
    admin.set_user_password(user_id, "alice-pass-1", temporary=False)
    tokens = KeycloakOpenID(server_url=server, realm_name="pyk", client_id="backend",
                            client_secret_key=regenerated["value"]).token("alice", "alice-pass-1")
    assert tokens["access_token"]

    admin.assign_realm_roles(user_id, [admin.get_realm_role("editor")])
    assert "editor" in [r["name"] for r in admin.get_realm_roles_of_user(user_id)]
    assert "offline_access" in [r["name"] for r in admin.get_composite_realm_roles_of_user(user_id)]
    admin.assign_client_role(user_id, client_uuid, [admin.get_client_role(client_uuid, "reader")])
    assert [r["name"] for r in admin.get_client_roles_of_user(user_id, client_uuid)] == ["reader"]
    admin.group_user_add(user_id, sub_id)
    assert [g["path"] for g in admin.get_user_groups(user_id)] == ["/staff/ops"]
    assert [u["username"] for u in admin.get_group_members(sub_id)] == ["alice"]
    assert [g["name"] for g in admin.get_groups()] == ["staff"]

    assert [u["username"] for u in admin.get_users({"search": "al"})] == ["alice"]
    assert admin.get_user_id("bob") is not None
    assert [u["username"] for u in admin.get_users({"q": "dept:ops"})] == ["alice"]
    assert admin.users_count() == 2
    assert admin.users_count({"email": "example.org"}) == 2
    admin.update_user(user_id, {"lastName": "Liddell"})
    assert admin.get_user(user_id)["lastName"] == "Liddell"

    admin.delete_user(user_id)
    with pytest.raises(KeycloakGetError) as exc:
        admin.get_user(user_id)
    assert exc.value.response_code == 404
    assert admin.users_count() == 1
    results = admin.partial_import_realm("pyk", {"ifResourceExists": "SKIP",
                                                 "users": [{"username": "carol"}, {"username": "bob"}]})
    assert (results["added"], results["skipped"], results["overwritten"]) == (1, 1, 0)
    with pytest.raises(KeycloakPostError) as exc:
        admin.partial_import_realm("pyk", {"users": [{"username": "bob"}]})
    assert exc.value.response_code == 409
    exported = admin.export_realm(export_clients=True, export_groups_and_role=True)
    assert next(c for c in exported["clients"] if c["clientId"] == "backend")["secret"] == "**********"
    assert [u["username"] for u in exported["users"]] == ["service-account-backend"]
    master.delete_realm("pyk")
    with pytest.raises(KeycloakError):
        master.get_realm("pyk")


def test_python_keycloak_scopes_events_keys_sessions(server):
    """python-keycloak's calls for client scopes, protocol and scope mappers, attack detection,
    events, keys and sessions (docs/decisions/0023)."""
    master = KeycloakAdmin(server_url=server, username=ADMIN, password=ADMIN_PASSWORD, realm_name="master",
                           user_realm_name="master")
    master.create_realm({"realm": "pyk2", "enabled": True, "adminEventsEnabled": True})
    admin = KeycloakAdmin(server_url=server, username=ADMIN, password=ADMIN_PASSWORD, realm_name="pyk2",
                          user_realm_name="master")
    scope_id = admin.create_client_scope({"name": "api.read", "protocol": "openid-connect"})
    assert admin.create_client_scope({"name": "api.read"}, skip_exists=True) == scope_id  # the 409
    assert admin.get_client_scope(scope_id)["name"] == "api.read"
    admin.update_client_scope(scope_id, {"description": "read"})
    mapper = {"name": "tenant", "protocol": "openid-connect", "protocolMapper": "oidc-hardcoded-claim-mapper",
              "config": {"claim.name": "tenant", "claim.value": "t1", "access.token.claim": "true"}}
    admin.add_mapper_to_client_scope(scope_id, mapper)
    assert [m["name"] for m in admin.get_mappers_from_client_scope(scope_id)] == ["tenant"]

    client_uuid = admin.create_client({"clientId": "app", "publicClient": True})
    admin.add_mapper_to_client(client_uuid, {**mapper, "name": "own"})
    assert [m["name"] for m in admin.get_mappers_from_client(client_uuid)] == ["own"]
    admin.add_client_default_client_scope(client_uuid, scope_id, {})
    assert "api.read" in [s["name"] for s in admin.get_client_default_client_scopes(client_uuid)]
    admin.add_default_default_client_scope(scope_id)
    assert "api.read" in [s["name"] for s in admin.get_default_default_client_scopes()]
    assert admin.create_realm_role({"name": "reader"}) == "reader"
    admin.assign_realm_roles_to_client_scope(client_uuid, [admin.get_realm_role("reader")])
    assert [r["name"] for r in admin.get_realm_roles_of_client_scope(client_uuid)] == ["reader"]

    user_id = admin.create_user({"username": "carol", "enabled": True})
    assert admin.get_bruteforce_detection_status(user_id)["numFailures"] == 0
    admin.clear_bruteforce_attempts_for_user(user_id)
    admin.clear_all_bruteforce_attempts()

    admin.set_events({"eventsEnabled": True, "enabledEventTypes": ["LOGIN"]})
    assert admin.get_events() == []
    assert {"CREATE"} <= {e["operationType"] for e in admin.get_admin_events({"resourceTypes": "CLIENT_SCOPE"})}
    keys = admin.get_keys()
    assert keys["active"]["RS256"] in [k["kid"] for k in keys["keys"]]
    assert admin.get_client_all_sessions(client_uuid) == []
    admin.delete_client_scope(scope_id)
    master.delete_realm("pyk2")


JS = ROOT / "tests" / "js"
# Each package tests/js installs and the release series it must be: the one the tests pinned first,
# and the newest (`npm view @keycloak/keycloak-admin-client version`) under an npm alias. Since 26.7
# find and create of realms, users, groups, clients, components and organizations send their
# collection's path with a trailing slash.
ADMIN_CLIENTS = {"@keycloak/keycloak-admin-client": "26.0.", "keycloak-admin-client-newest": "26.7."}


@pytest.mark.parametrize("package", ADMIN_CLIENTS)
def test_keycloak_admin_client_js_script(server, package):
    """The same script with Keycloak's JavaScript admin client (installed by scripts/setup.sh)."""
    installed = JS / "node_modules" / package / "package.json"
    assert installed.is_file(), "run scripts/setup.sh test (it installs tests/js)"
    assert json.loads(installed.read_text())["version"].startswith(ADMIN_CLIENTS[package])
    done = subprocess.run(["node", "admin-client.mjs"], cwd=JS, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "IDP_BASE_URL": server.rstrip("/"), "IDP_ADMIN_USERNAME": ADMIN,
                               "IDP_ADMIN_PASSWORD": ADMIN_PASSWORD, "IDP_ADMIN_CLIENT": package})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "admin client script: ok" in done.stdout


KCADM = Path(sys.executable).with_name("kcadm.sh")


def test_admin_cli_script(server, tmp_path):
    """The admin CLI as installed (``kcadm.sh``), end to end as Keycloak's documentation drives
    it: sign in once, then create, get, update and delete with the shortcuts, each answer checked."""
    config = tmp_path / "kcadm.config"

    def kcadm(*args, ok=True, stdin=None):
        done = subprocess.run([str(KCADM), *args, "--config", str(config)], capture_output=True, text=True,
                              timeout=60, input=stdin)
        assert (done.returncode == 0) == ok, done.stdout + done.stderr
        return done

    signed_in = kcadm("config", "credentials", "--server", server, "--realm", "master",
                      "--user", ADMIN, "--password", ADMIN_PASSWORD)
    assert signed_in.stderr == f"Logging into {server.rstrip('/')} as user {ADMIN} of realm master\n"
    assert config.stat().st_mode & 0o777 == 0o600
    assert kcadm("create", "realms", "-s", "realm=cli", "-s", "enabled=true").stderr == \
        "Created new realm with id 'cli'\n"
    client_uuid = kcadm("create", "clients", "-r", "cli", "-s", "clientId=svc", "-s", "publicClient=false",
                        "-s", "serviceAccountsEnabled=true", "-s", 'redirectUris=["http://app.test/cb"]',
                        "-i").stdout.strip()
    assert kcadm("get", f"clients/{client_uuid}", "-r", "cli", "--fields", "clientId,redirectUris").stdout == (
        '{\n  "clientId" : "svc",\n  "redirectUris" : [ "http://app.test/cb" ]\n}\n')
    assert kcadm("create", "roles", "-r", "cli", "-s", "name=editor", "-o", "--fields", "name").stdout == \
        '{\n  "name" : "editor"\n}\n'
    kcadm("create", "groups", "-r", "cli", "-f", "-", stdin='{"name": "staff"}')
    user_id = kcadm("create", "users", "-r", "cli", "-s", "username=alice", "-s", "enabled=true",
                    "-s", 'attributes.dept=["ops"]', "-i").stdout.strip()
    kcadm("create", "users", "-r", "cli", "-s", "username=bob", "-s", "enabled=true")
    assert kcadm("create", "users", "-r", "cli", "-s", "username=alice", ok=False).stderr == \
        "User exists with same username\n"

    kcadm("set-password", "-r", "cli", "--username", "alice", "--new-password", "Alice-pass-1")
    token = requests.post(f"{server}realms/cli/protocol/openid-connect/token", timeout=30, data={
        "grant_type": "password", "client_id": "admin-cli", "username": "alice", "password": "Alice-pass-1"})
    assert token.status_code == 200, token.text

    kcadm("add-roles", "-r", "cli", "--uusername", "alice", "--rolename", "editor")
    kcadm("add-roles", "-r", "cli", "--uusername", "alice", "--cclientid", "realm-management",
          "--rolename", "view-users", "--rolename", "query-groups")
    realm_roles = kcadm("get-roles", "-r", "cli", "--uusername", "alice", "--fields", "name",
                        "--format", "csv", "--noquotes").stdout.split()
    assert "editor" in realm_roles and "view-users" not in realm_roles
    assert "offline_access" in kcadm("get-roles", "-r", "cli", "--uusername", "alice", "--effective",
                                     "--fields", "name", "-c").stdout
    client_roles = ["realm-management", "--fields", "name", "--format", "csv"]
    assert sorted(kcadm("get-roles", "-r", "cli", "--uusername", "alice", "--cclientid",
                        *client_roles).stdout.split()) == ['"query-groups"', '"view-users"']
    kcadm("remove-roles", "-r", "cli", "--uusername", "alice", "--cclientid", "realm-management",
          "--rolename", "query-groups")
    assert kcadm("get-roles", "-r", "cli", "--uusername", "alice", "--cclientid",
                 *client_roles).stdout.split() == ['"view-users"']
    kcadm("add-roles", "-r", "cli", "--gname", "staff", "--rolename", "editor")
    assert kcadm("get-roles", "-r", "cli", "--gpath", "/staff", "--fields", "name", "-c").stdout == \
        '[{"name":"editor"}]\n'

    kcadm("update", f"users/{user_id}", "-r", "cli", "-s", "firstName=Alice")
    alice = json.loads(kcadm("get", f"users/{user_id}", "-r", "cli").stdout)
    assert (alice["firstName"], alice["attributes"]) == ("Alice", {"dept": ["ops"]})  # merged, not replaced
    assert kcadm("get", "users", "-r", "cli", "-q", "search=ali", "--fields", "username,attributes",
                 "--format", "csv", "-H").stdout == '"username","attributes.dept"\n"alice","[""ops""]"\n'
    assert kcadm("get", "users", "-r", "cli", "--offset", "1", "--limit", "1", "--fields", "username",
                 "-c").stdout == '[{"username":"bob"}]\n'
    assert kcadm("get", "users/count", "-r", "cli").stdout.strip() == "2"

    # An expired access token is refreshed by itself, and the new one is kept.
    saved = json.loads(config.read_text())
    session = saved["endpoints"][server.rstrip("/")]["master"]
    old_token, session["expiresAt"] = session["token"], 0
    config.write_text(json.dumps(saved))
    kcadm("get", "serverinfo", "--fields", "systemInfo(version)")
    assert json.loads(config.read_text())["endpoints"][server.rstrip("/")]["master"]["token"] != old_token
    session = json.loads(config.read_text())
    session["endpoints"][server.rstrip("/")]["master"].update(expiresAt=0, refreshExpiresAt=1)
    config.write_text(json.dumps(session))
    assert kcadm("get", "realms/cli", ok=False).stderr == \
        "Session has expired. Login again with 'config credentials'\n"
    kcadm("config", "credentials", "--server", server, "--realm", "master", "--user", ADMIN,
          "--password", ADMIN_PASSWORD)

    # A service account with manage-users signs in with its secret, per command and stored.
    kcadm("add-roles", "-r", "cli", "--uusername", "service-account-svc", "--cclientid", "realm-management",
          "--rolename", "manage-users", "--rolename", "view-users")
    secret = json.loads(kcadm("get", f"clients/{client_uuid}/client-secret", "-r", "cli").stdout)["value"]
    assert "alice" in kcadm("get", "users", "--no-config", "--server", server, "--realm", "cli",
                            "--client", "svc", "--secret", secret, "--fields", "username").stdout
    assert kcadm("get", "clients", "--no-config", "--server", server, "--realm", "cli", "--client", "svc",
                 "--secret", secret, ok=False).returncode == 1  # no view-clients: the server's 403
    assert kcadm("get", "users", "--no-config", "--server", server, "--realm", "cli", "--client", "svc",
                 "--secret", "wrong", ok=False).stderr.endswith("Invalid client or Invalid client credentials\n")

    kcadm("delete", f"users/{user_id}", "-r", "cli")
    assert kcadm("get", f"users/{user_id}", "-r", "cli", ok=False).stderr == "User not found\n"
    assert kcadm("get", "no-such-endpoint", "-r", "cli", ok=False).stderr == \
        "Unable to find matching target resource method\n"
    assert kcadm("update", "realms/cli", "-s", "a.b[x]=1", ok=False).stderr == "Invalid attribute name: a.b[x]\n"
    kcadm("delete", "realms/cli")
    assert kcadm("get", "realms/cli", ok=False).returncode == 1
