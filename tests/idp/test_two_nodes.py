"""Two production nodes on one PostgreSQL and one Redis, as behind a load balancer (one public
address, so one issuer): what one node does, the other honours within one second: tokens and
sessions, a revocation, a client disabled, a new signing key, a brute-force lockout; and the SSO
sessions outlive a node's restart."""
import base64
import json
import os
import time

import pytest
import requests

from .test_modes import base_env, free_port, manage, production_database, stop, wait_for  # noqa: F401

pytestmark = pytest.mark.postgresql
PUBLIC = "https://id.example.org"  # the load balancer's address: the issuer of both nodes
REALM = "shop"
SECRET = "app-secret-" + "s" * 24
PASSWORD = "ann-pass-1234"


class Node:
    def __init__(self, database, var_dir):
        self.http, self.mgmt = free_port(), free_port()
        self.database, self.var_dir, self.proc = database, var_dir, None
        self.base = f"http://127.0.0.1:{self.http}"
        self.oidc = f"{self.base}/realms/{REALM}/protocol/openid-connect"

    def start(self):
        env = base_env(
            DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_HOSTNAME="id.example.org", IDP_BASE_URL=PUBLIC,
            IDP_SECRET_KEY="n" * 50, IDP_DB_URL=self.database, IDP_REDIS_URL=os.environ["IDP_TEST_REDIS_URL"],
            IDP_VAR_DIR=str(self.var_dir), IDP_BOOTSTRAP_ADMIN_USERNAME="root",
            IDP_BOOTSTRAP_ADMIN_PASSWORD="root-pass-1",
        )
        self.var_dir.mkdir(exist_ok=True)
        self.proc = manage("start", "--http-port", str(self.http), "--management-port", str(self.mgmt),
                           "--bind", "127.0.0.1", "--workers", "1", env=env)
        wait_for(f"http://127.0.0.1:{self.mgmt}/health/ready", deadline_s=120, proc=self.proc)

    def stop(self):
        if self.proc is not None:
            stop(self.proc)
            self.proc = None

    def post(self, path, data, **kwargs):
        # The load balancer's Host: the one name the nodes serve.
        return requests.post(self.oidc + path, data=data, headers={"Host": "id.example.org",
                                                                   **kwargs.pop("headers", {})}, timeout=10, **kwargs)

    def token(self, **data):
        return self.post("/token", {"client_id": "app", "client_secret": SECRET, **data})

    def admin(self, method, path, body=None):
        token = requests.post(f"{self.base}/realms/master/protocol/openid-connect/token", timeout=10,
                              headers={"Host": "id.example.org"},
                              data={"grant_type": "password", "client_id": "admin-cli", "username": "root",
                                    "password": "root-pass-1"}).json()["access_token"]
        return requests.request(method, f"{self.base}/admin/realms{path}", json=body, timeout=30,
                                headers={"Authorization": f"Bearer {token}", "Host": "id.example.org"})


def within_a_second(check):
    """Seconds until ``check()`` holds, polled every 20 ms; fails after one second."""
    started = time.monotonic()
    while True:
        if check():
            return time.monotonic() - started
        assert time.monotonic() - started < 1.0, "not seen by the other node within one second"
        time.sleep(0.02)


@pytest.fixture
def nodes(production_database, tmp_path):
    a, b = Node(production_database, tmp_path / "a"), Node(production_database, tmp_path / "b")
    try:
        a.start()
        b.start()
        created = a.admin("post", "", {
            "realm": REALM, "enabled": True, "sslRequired": "none", "bruteForceProtected": True,
            "failureFactor": 2, "waitIncrementSeconds": 60,
            "clients": [{"clientId": "app", "secret": SECRET, "directAccessGrantsEnabled": True,
                         "serviceAccountsEnabled": True}],
            "users": [{"username": "ann", "enabled": True, "email": "ann@example.org", "emailVerified": True,
                       "firstName": "Ann", "lastName": "Lee",
                       "credentials": [{"type": "password", "value": PASSWORD}]}],
        })
        assert created.status_code == 201, created.text
        yield a, b
    finally:
        a.stop()
        b.stop()


def test_what_one_node_does_the_other_honours_within_a_second(nodes):
    a, b = nodes
    # Signed in on one node, refreshed and asked about on the other.
    signed_in = a.token(grant_type="password", username="ann", password=PASSWORD, scope="openid")
    assert signed_in.status_code == 200, signed_in.text
    refreshed = b.token(grant_type="refresh_token", refresh_token=signed_in.json()["refresh_token"])
    assert refreshed.status_code == 200, refreshed.text
    access = refreshed.json()["access_token"]
    userinfo = requests.get(a.oidc + "/userinfo", timeout=10,
                            headers={"Authorization": f"Bearer {access}", "Host": "id.example.org"})
    assert userinfo.json()["preferred_username"] == "ann"

    # Signed out on one node: the other refuses the session's refresh token.
    current = refreshed.json()["refresh_token"]
    assert b.post("/logout", {"client_id": "app", "client_secret": SECRET, "refresh_token": current}).status_code == 204
    within_a_second(lambda: a.token(grant_type="refresh_token", refresh_token=current).status_code == 400)

    # A new signing key of higher priority, added on one node, signs the other node's tokens.
    added = a.admin("post", f"/{REALM}/components", {
        "name": "rotated", "providerId": "rsa-generated", "providerType": "org.keycloak.keys.KeyProvider",
        "config": {"priority": ["500"]}})
    assert added.status_code == 201, added.text
    keys = a.admin("get", f"/{REALM}/keys").json()
    newest = next(k["kid"] for k in keys["keys"] if k.get("providerPriority") == 500 and k["algorithm"] == "RS256")

    def signed_with_the_new_key():
        token = b.token(grant_type="client_credentials").json()["access_token"]
        return json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))["kid"] == newest

    within_a_second(signed_with_the_new_key)

    # Two wrong passwords on one node lock the user out on the other (failureFactor 2).
    for _ in range(2):
        assert a.token(grant_type="password", username="ann", password="wrong").status_code in (400, 401)
    within_a_second(lambda: b.token(grant_type="password", username="ann", password=PASSWORD).status_code != 200)

    # The client disabled on one node: the other refuses it.
    client_id = a.admin("get", f"/{REALM}/clients?clientId=app").json()[0]["id"]
    assert a.admin("put", f"/{REALM}/clients/{client_id}", {"enabled": False}).status_code == 204
    within_a_second(lambda: b.token(grant_type="client_credentials").status_code in (400, 401))


def test_sso_sessions_outlive_a_rolling_restart(nodes):
    a, b = nodes
    signed_in = a.token(grant_type="password", username="ann", password=PASSWORD, scope="openid")
    refresh_token = signed_in.json()["refresh_token"]
    a.stop()  # the first node goes down: the other carries the session on
    refreshed = b.token(grant_type="refresh_token", refresh_token=refresh_token)
    assert refreshed.status_code == 200, refreshed.text
    a.start()
    b.stop()  # and back: the restarted node carries it on
    again = a.token(grant_type="refresh_token", refresh_token=refreshed.json()["refresh_token"])
    assert again.status_code == 200, again.text
