"""python-keycloak's ``KeycloakUMA`` policy methods unchanged against ``manage.py start_dev``:
an owner's ``policy_resource_create``, ``policy_query``, ``policy_update`` and ``policy_delete``
(with their own token, as Keycloak's UserManagedPermissionService wants), decided by
``permissions_check`` at once."""
import copy

import pytest
from keycloak import KeycloakOpenID, KeycloakOpenIDConnection, KeycloakUMA
from keycloak.uma_permissions import UMAPermission

from tests.authz.test_interop_python_keycloak import SECRET, realm_b
from tests.realms.test_import_export import load

REALM = "uma-pykc-owner"


@pytest.fixture(scope="module")
def server(start_dev):
    return realm_b(start_dev, REALM)


def uma_as(server, username=None):
    credentials = {"username": username, "password": username} if username else {}
    return KeycloakUMA(connection=KeycloakOpenIDConnection(
        server_url=server, realm_name=REALM, client_id="realm-b-client", client_secret_key=SECRET, **credentials))


def test_an_owner_manages_policies_on_their_resource(server):
    album = uma_as(server).resource_set_create({
        "name": "Kolo's album", "owner": "kolo", "ownerManagedAccess": True,
        "resource_scopes": ["album:view", "album:delete"]})
    kolo = uma_as(server, "kolo")
    created = kolo.policy_resource_create(album["_id"], {"name": "jdoe views", "scopes": ["album:view"],
                                                         "users": ["jdoe"]})
    assert created["type"] == "uma" and created["users"] == ["jdoe"]
    jdoe = KeycloakOpenID(server_url=server, realm_name=REALM, client_id="realm-b-client",
                          client_secret_key=SECRET).token("jdoe", "jdoe")["access_token"]
    view, delete = (UMAPermission(resource=album["_id"], scope=s) for s in ("album:view", "album:delete"))
    assert kolo.permissions_check(jdoe, [view])
    assert not kolo.permissions_check(jdoe, [delete])
    assert [p["id"] for p in kolo.policy_query(resource=album["_id"])] == [created["id"]]
    kolo.policy_update(created["id"], {"name": "jdoe views and deletes", "users": ["jdoe"]})
    assert kolo.permissions_check(jdoe, [delete])
    kolo.policy_delete(created["id"])
    assert kolo.policy_query(resource=album["_id"]) == []
    assert not kolo.permissions_check(jdoe, [view])
