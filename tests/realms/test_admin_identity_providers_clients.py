"""Keycloak's own admin clients against ``manage.py start_dev`` (a real server in its own process):
``@keycloak/keycloak-admin-client`` (the release first pinned and the newest, tests/js) and
python-keycloak's KeycloakAdmin create, read, update and delete an OpenID Connect identity
provider and its mappers, and link a user to it."""
import json
import os
import subprocess
from pathlib import Path

import pytest
from keycloak import KeycloakAdmin
from keycloak.exceptions import KeycloakGetError, KeycloakPostError

ROOT = Path(__file__).resolve().parents[2]
JS = ROOT / "tests" / "js"
ADMIN, ADMIN_PASSWORD = "boot", "boot-pass-1"  # the start_dev fixture's bootstrap admin
ADMIN_CLIENTS = {"@keycloak/keycloak-admin-client": "26.0.", "keycloak-admin-client-newest": "26.7."}


@pytest.mark.parametrize("package", ADMIN_CLIENTS)
def test_keycloak_admin_client_js(start_dev, package):
    base, _ = start_dev
    installed = JS / "node_modules" / package / "package.json"
    assert json.loads(installed.read_text())["version"].startswith(ADMIN_CLIENTS[package])
    done = subprocess.run(["node", "admin-client-idp.mjs"], cwd=JS, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "IDP_BASE_URL": base, "IDP_ADMIN_USERNAME": ADMIN,
                               "IDP_ADMIN_PASSWORD": ADMIN_PASSWORD, "IDP_ADMIN_CLIENT": package,
                               "IDP_REALM": "jsidp-" + package.rsplit("-", 1)[-1].replace("/", "-")})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "identity providers script: ok" in done.stdout


def test_python_keycloak(start_dev):
    base, _ = start_dev
    master = KeycloakAdmin(server_url=base, username=ADMIN, password=ADMIN_PASSWORD, realm_name="master",
                           user_realm_name="master")
    master.create_realm({"realm": "pyidp", "enabled": True})
    admin = KeycloakAdmin(server_url=base, username=ADMIN, password=ADMIN_PASSWORD, realm_name="pyidp",
                          user_realm_name="master")
    payload = {"alias": "corp", "displayName": "Corp SSO", "providerId": "oidc", "enabled": True,
               "config": {"clientId": "our-app", "clientSecret": "py-secret-1", "clientAuthMethod": "client_secret_post",
                          "authorizationUrl": "https://sso.corp.example/authorize",
                          "tokenUrl": "https://sso.corp.example/token", "issuer": "https://sso.corp.example",
                          "jwksUrl": "https://sso.corp.example/jwks", "useJwksUrl": "true",
                          "validateSignature": "true", "syncMode": "IMPORT"}}
    admin.create_idp(payload)
    with pytest.raises(KeycloakPostError) as exc:
        admin.create_idp(payload)
    assert exc.value.response_code == 409
    assert [i["alias"] for i in admin.get_idps()] == ["corp"]
    got = admin.get_idp("corp")
    assert got["config"]["clientSecret"] == "**********" and got["displayName"] == "Corp SSO"

    admin.update_idp("corp", {**got, "hideOnLogin": True})
    assert admin.get_idp("corp")["hideOnLogin"] is True

    admin.add_mapper_to_idp("corp", {"name": "staff", "identityProviderAlias": "corp",
                                     "identityProviderMapper": "oidc-hardcoded-role-idp-mapper",
                                     "config": {"role": "offline_access", "syncMode": "INHERIT"}})
    mappers = admin.get_idp_mappers("corp")
    assert [m["name"] for m in mappers] == ["staff"]
    admin.update_mapper_in_idp("corp", mappers[0]["id"], {**mappers[0], "config": {**mappers[0]["config"],
                                                                                  "syncMode": "FORCE"}})
    assert admin.get_idp_mappers("corp")[0]["config"]["syncMode"] == "FORCE"

    user_id = admin.create_user({"username": "linked", "enabled": True})
    admin.add_user_social_login(user_id, "corp", "corp-9", "linked@corp")
    assert admin.get_user_social_logins(user_id) == [
        {"identityProvider": "corp", "userId": "corp-9", "userName": "linked@corp"}]
    admin.delete_user_social_login(user_id, "corp")
    assert admin.get_user_social_logins(user_id) == []

    admin.delete_idp("corp")
    assert admin.get_idps() == []
    with pytest.raises(KeycloakGetError) as exc:
        admin.get_idp("corp")
    assert exc.value.response_code == 404
    master.delete_realm("pyidp")
