"""Authorization server metadata (RFC 8414) at Keycloak's address and at RFC 8414 §3.1's path
insertion, and the resource-server helper's protected resource metadata (RFC 9728) with its
WWW-Authenticate hint."""
import json

import pytest
import requests
from django.test import RequestFactory

from oidc import resource_server
from oidc.resource_server import metadata_url, protected_resource_metadata, protected_resource_view, require_bearer

from .conftest import MCP, SECRET

pytestmark = pytest.mark.django_db


def paths(realm):
    return (f"/realms/{realm.name}/.well-known/oauth-authorization-server",
            f"/.well-known/oauth-authorization-server/realms/{realm.name}")


def test_both_addresses_answer_the_discovery_document(http, realm):
    discovery = http.get(f"/realms/{realm.name}/.well-known/openid-configuration").json()
    for path in paths(realm):
        answer = http.get(path, HTTP_ORIGIN="https://inspector.example")
        assert answer.status_code == 200 and answer["Content-Type"] == "application/json"
        assert answer.json() == discovery
        assert answer["Access-Control-Allow-Origin"] == "https://inspector.example"  # any origin, as discovery
        meta = answer.json()
        # What an MCP client needs of it (RFC 8414 §2, §3.3; MCP: PKCE S256 advertised).
        assert meta["issuer"] == f"http://testserver/realms/{realm.name}"
        assert "S256" in meta["code_challenge_methods_supported"]
        assert meta["token_endpoint"] == meta["issuer"] + "/protocol/openid-connect/token"


def test_preflight_head_and_refused_methods(http, realm):
    for path in paths(realm):
        preflight = http.options(path, HTTP_ORIGIN="https://inspector.example",
                                 HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET")
        assert preflight.status_code == 200 and preflight["Access-Control-Allow-Origin"]
        assert http.head(path).status_code == 200
        assert http.post(path).status_code == 405


def test_unknown_or_disabled_realm_is_404(http, realm):
    for path in paths(realm):
        assert http.get(path.replace(realm.name, "no-such-realm")).status_code == 404
    realm.enabled = False
    realm.save()
    for path in paths(realm):
        assert http.get(path).status_code == 404


# Protected resource metadata ----------------------------------------------------------------------

def test_metadata_url_inserts_the_well_known_path():
    assert metadata_url("https://mcp.example/mcp") == "https://mcp.example/.well-known/oauth-protected-resource/mcp"
    assert metadata_url("https://api.example") == "https://api.example/.well-known/oauth-protected-resource"
    assert metadata_url("https://api.example/") == "https://api.example/.well-known/oauth-protected-resource"


def test_protected_resource_metadata_document():
    doc = protected_resource_metadata(MCP, ["https://id.example/realms/demo"], scopes_supported=["mcp:tools"],
                                      resource_name="Demo MCP", jwks_uri=None)
    assert doc == {"resource": MCP, "authorization_servers": ["https://id.example/realms/demo"],
                   "bearer_methods_supported": ["header"], "scopes_supported": ["mcp:tools"],
                   "resource_name": "Demo MCP"}
    for bad in ("mcp.example/mcp", "https://mcp.example/mcp#f", "ftp://mcp.example/x"):
        with pytest.raises(ValueError):
            protected_resource_metadata(bad, [])


def test_protected_resource_view_with_cors(settings):
    settings.OIDC_RESOURCE_SERVER_BASE_URL = "https://id.example"
    view = protected_resource_view(MCP, realm="demo", scopes_supported=["mcp:tools"])
    factory = RequestFactory()
    answer = view(factory.get("/.well-known/oauth-protected-resource/mcp", HTTP_ORIGIN="https://x.example"))
    assert answer.status_code == 200 and answer["Access-Control-Allow-Origin"] == "https://x.example"
    assert json.loads(answer.content)["authorization_servers"] == ["https://id.example/realms/demo"]
    assert view(factory.options("/", HTTP_ORIGIN="https://x.example",
                                HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET")).status_code == 200
    assert view(factory.post("/")).status_code == 405


@pytest.fixture
def live_issuer(live_server, realm):
    resource_server._validators.clear()
    return f"{live_server.url}/realms/{realm.name}"


def mcp_token(issuer, resource=MCP):
    answer = requests.post(f"{issuer}/protocol/openid-connect/token", timeout=10, auth=("app", SECRET),
                           data={"grant_type": "client_credentials", "resource": resource})
    assert answer.status_code == 200, answer.text
    return answer.json()["access_token"]


def test_require_bearer_names_the_metadata_in_its_challenges(live_issuer):
    """An MCP server: the token's audience is the resource (RFC 8707); every refusal points the
    client at the resource's metadata (RFC 9728 §5.1)."""
    hint = f'resource_metadata="{metadata_url(MCP)}"'

    @require_bearer(issuer=live_issuer, audience=MCP, resource_metadata=metadata_url(MCP))
    def tools(request):
        from django.http import JsonResponse
        return JsonResponse({"azp": request.token["azp"]})

    @require_bearer(issuer=live_issuer, audience=MCP, scope="mcp:admin", resource_metadata=metadata_url(MCP))
    def admin(request):
        raise AssertionError("must not run")

    factory = RequestFactory()
    token = mcp_token(live_issuer)
    assert tools(factory.get("/mcp", HTTP_AUTHORIZATION="Bearer " + token)).status_code == 200
    missing = tools(factory.get("/mcp"))
    assert missing.status_code == 401
    assert missing["WWW-Authenticate"].startswith("Bearer ") and hint in missing["WWW-Authenticate"]
    # A token for another audience (no resource asked) is refused with the same hint.
    other = requests.post(f"{live_issuer}/protocol/openid-connect/token", auth=("app", SECRET), timeout=10,
                          data={"grant_type": "client_credentials"}).json()["access_token"]
    wrong = tools(factory.get("/mcp", HTTP_AUTHORIZATION="Bearer " + other))
    assert wrong.status_code == 401 and hint in wrong["WWW-Authenticate"]
    denied = admin(factory.get("/mcp", HTTP_AUTHORIZATION="Bearer " + token))
    assert denied.status_code == 403 and 'error="insufficient_scope"' in denied["WWW-Authenticate"]
    assert hint in denied["WWW-Authenticate"]


def test_without_resource_metadata_the_challenge_is_unchanged(live_issuer):
    @require_bearer(issuer=live_issuer, audience=MCP)
    def tools(request):
        raise AssertionError("must not run")

    missing = tools(RequestFactory().get("/mcp"))
    assert missing.status_code == 401 and "resource_metadata" not in missing["WWW-Authenticate"]


def test_drf_challenge_names_the_metadata(settings):
    settings.OIDC_RESOURCE_SERVER = {"ISSUER": "https://id.example/realms/demo", "AUDIENCE": MCP,
                                     "RESOURCE_METADATA": metadata_url(MCP)}
    header = resource_server.BearerAuthentication().authenticate_header(None)
    assert header == f'Bearer realm="api", error="invalid_token", resource_metadata="{metadata_url(MCP)}"'
