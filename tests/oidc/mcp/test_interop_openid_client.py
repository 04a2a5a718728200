"""panva's openid-client v6 (the pinned release and the newest) as an MCP client against a real
``manage.py start_dev`` of this module's own (it needs the experimental client-id-metadata-document
feature on): its client_id is the URL of a client id metadata document this test serves on
loopback (dev mode's outbound calls allow http and loopback, so does the https rule of CIMD,
decision 0074); the code flow carries an RFC 8707 resource and the access token's aud is it."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.idp.test_modes import base_env, free_port, manage, stop, wait_for

from .conftest import MCP, OTHER, PASSWORD, DocumentServer, representation

ROOT = Path(__file__).resolve().parents[3]
JS = ROOT / "tests" / "js"
PACKAGES = {"openid-client": "6.8.", "openid-client-newest": "6.9."}
REALM = "mcpjs"
CALLBACK = "http://127.0.0.1:9/callback"


def realm_representation():
    rep = representation(REALM, attributes={"cimd-allow-permitted-domains": "127.0.0.1"})
    # The MCP server's role in the built-in roles scope: a client with full scope off (a document's)
    # may carry it, so the audience resolve mapper names the MCP server.
    rep["clientScopeMappings"] = {"mcp-server": [{"clientScope": "roles", "roles": ["tools"]}]}
    return rep


@pytest.fixture(scope="module")
def mcp_server(tmp_path_factory):
    """(issuer, document server) of a start_dev with client id metadata documents on."""
    documents = DocumentServer()
    var = tmp_path_factory.mktemp("mcp-start-dev")
    env = base_env(DJANGO_SETTINGS_MODULE="idp.settings.dev", IDP_VAR_DIR=str(var),
                   IDP_FEATURES="client-id-metadata-document")
    http, mgmt = free_port(), free_port()
    proc = manage("start_dev", "--http-port", str(http), "--management-port", str(mgmt), env=env)
    try:
        wait_for(f"http://127.0.0.1:{mgmt}/health/ready", proc=proc)
        realm_file = var / f"{REALM}.json"
        realm_file.write_text(json.dumps(realm_representation()))
        imported = manage("import_realm", str(realm_file), env=env)
        out, _ = imported.communicate(timeout=120)
        assert imported.returncode == 0, out
        yield f"http://127.0.0.1:{http}/realms/{REALM}", documents
    finally:
        stop(proc)
        documents.close()
        print(proc.stdout.read())


@pytest.mark.parametrize("package", PACKAGES)
def test_openid_client_mcp_flow(mcp_server, package):
    issuer, documents = mcp_server
    installed = JS / "node_modules" / package / "package.json"
    assert json.loads(installed.read_text())["version"].startswith(PACKAGES[package])
    path = f"/{package}/client.json"
    client_id = documents.base + path
    documents.serve(path, {"client_id": client_id, "client_name": f"MCP client ({package})",
                           "redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none",
                           "grant_types": ["authorization_code", "refresh_token"]},
                    headers={"Cache-Control": "max-age=60"})
    done = subprocess.run(["node", "openid-client-mcp.mjs"], cwd=JS, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "IDP_ISSUER": issuer, "IDP_CLIENT_ID": client_id,
                               "IDP_REDIRECT_URI": CALLBACK, "IDP_USERNAME": "alice", "IDP_PASSWORD": PASSWORD,
                               "MCP_RESOURCE": MCP, "OTHER_RESOURCE": OTHER, "OPENID_CLIENT": package})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mcp script: ok" in done.stdout
    assert documents.hits[path] == 1  # fetched once, then answered from the cache (max-age=60)
