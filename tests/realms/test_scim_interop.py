"""scim2-tester (PyPI), nobody here wrote it, checks the SCIM endpoint of a realm served by
``start_dev``: discovery, then create, read, query with attributes, replace, PATCH add/replace/
remove and delete of Users and Groups. No check may end in an error."""
import httpx2
import requests
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_tester import Status, check_server

SECRET = "scim-provisioner-secret-0123456789"


def test_scim2_tester_reports_no_failure(start_dev):
    base, import_realm = start_dev
    scim_base = f"{base}/realms/scimt/scim/v2"
    import_realm({
        "realm": "scimt", "enabled": True, "scimApiEnabled": True, "editUsernameAllowed": True,
        "clients": [{
            "clientId": "provisioner", "secret": SECRET, "publicClient": False, "serviceAccountsEnabled": True,
            "standardFlowEnabled": False, "protocolMappers": [{
                "name": "scim audience", "protocol": "openid-connect", "protocolMapper": "oidc-audience-mapper",
                "config": {"included.custom.audience": scim_base, "access.token.claim": "true"}}],
        }],
        "users": [{"username": "service-account-provisioner", "serviceAccountClientId": "provisioner",
                   "enabled": True, "clientRoles": {"realm-management": ["manage-users", "view-users"]}}],
    })
    token = requests.post(f"{base}/realms/scimt/protocol/openid-connect/token", timeout=30, data={
        "grant_type": "client_credentials", "client_id": "provisioner", "client_secret": SECRET}).json()
    http = httpx2.Client(base_url=scim_base, headers={"Authorization": f"Bearer {token['access_token']}"},
                        timeout=30)
    results = check_server(SyncSCIMClient(http))
    failures = [(r.title, r.resource_type, r.reason) for r in results
                if r.status in (Status.ERROR, Status.CRITICAL)]
    assert not failures, "\n".join(map(str, failures))
    ran = {r.title for r in results if r.status == Status.SUCCESS}
    assert {"object_creation", "object_query", "object_replacement", "object_deletion"} <= ran, sorted(ran)
