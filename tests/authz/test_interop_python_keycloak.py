"""python-keycloak's UMA client unchanged against ``manage.py start_dev``: ``KeycloakOpenID``'s
``uma_permissions`` and ``has_uma_access``, ``KeycloakUMA``'s resource registration, permission
tickets and ``permissions_check``, on Keycloak's realm-b quickstart."""
import copy

import pytest
from keycloak import KeycloakOpenID, KeycloakOpenIDConnection, KeycloakUMA
from keycloak.exceptions import KeycloakPostError
from keycloak.uma_permissions import UMAPermission

from tests.realms.test_import_export import load

SECRET = "635691e2-f698-4df5-bed1-1f3c90f97815"
REALM = "uma-pykc"


def realm_b(start_dev, name):
    """Keycloak's realm-b quickstart imported into the running server as ``name``; its base URL."""
    base, import_realm = start_dev
    data = copy.deepcopy(load("quickstarts-kc9-full-export-realm-b.json"))
    data["realm"] = data["id"] = name
    import_realm(data)
    return base


@pytest.fixture(scope="module")
def server(start_dev):
    return realm_b(start_dev, REALM)


def openid(base):
    return KeycloakOpenID(server_url=base, realm_name=REALM, client_id="realm-b-client", client_secret_key=SECRET)


def test_uma_permissions_and_has_uma_access(server):
    keycloak = openid(server)
    jdoe = keycloak.token("jdoe", "jdoe")["access_token"]
    granted = keycloak.uma_permissions(jdoe, permissions="Default Resource")
    assert [p["rsname"] for p in granted] == ["Default Resource"]
    assert keycloak.has_uma_access(jdoe, "Default Resource").is_authorized
    denied = keycloak.has_uma_access(jdoe, "Premium Resource")
    assert denied.is_logged_in and not denied.is_authorized
    assert not keycloak.has_uma_access("garbage", "Default Resource").is_logged_in
    kolo = keycloak.token("kolo", "kolo")["access_token"]
    assert keycloak.has_uma_access(kolo, {"Default Resource", "Premium Resource"}).is_authorized
    with pytest.raises(KeycloakPostError) as refused:
        keycloak.uma_permissions(jdoe, permissions="Premium Resource")
    assert refused.value.response_code == 403


def test_keycloak_uma_resources_tickets_and_checks(server):
    connection = KeycloakOpenIDConnection(server_url=server, realm_name=REALM, client_id="realm-b-client",
                                          client_secret_key=SECRET)
    uma = KeycloakUMA(connection=connection)
    created = uma.resource_set_create({"name": "Report", "type": "urn:realm-b-client:resources:premium",
                                       "resource_scopes": ["report:read"], "uris": ["/report"]})
    assert created["_id"] and uma.resource_set_read(created["_id"])["name"] == "Report"
    assert created["_id"] in uma.resource_set_list_ids(name="Report", exact_name=True)
    uma.resource_set_update(created["_id"], {"name": "Report", "type": "urn:realm-b-client:resources:premium",
                                             "resource_scopes": ["report:read"], "uris": ["/report/v2"]})
    assert uma.resource_set_read(created["_id"])["uris"] == ["/report/v2"]
    assert "Report" in [r["name"] for r in uma.resource_set_list()]
    ticket = uma.permission_ticket_create([UMAPermission(resource="Report", scope="report:read")])
    assert ticket["ticket"]
    keycloak = openid(server)
    kolo = keycloak.token("kolo", "kolo")["access_token"]
    jdoe = keycloak.token("jdoe", "jdoe")["access_token"]
    permission = UMAPermission(resource="Report", scope="report:read")
    assert uma.permissions_check(kolo, [permission])  # premium
    assert not uma.permissions_check(jdoe, [permission])
    uma.resource_set_delete(created["_id"])
    assert created["_id"] not in uma.resource_set_list_ids()
