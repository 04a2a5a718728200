"""Two sites (Keycloak's multi-cluster v2, feature ``stateless``): one node per site, each site with
its own Redis, both on a PostgreSQL primary with a synchronous standby. What a node of one site
does, the other site's node honours within a second, through the database alone; and when the
primary's site is lost (its PostgreSQL, its node, its Redis) and the standby is promoted, the
other site carries on with every committed session, revocation, user change and lockout
(docs/operations/two-sites.md)."""
import base64
import html
import json
import re
import time
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from tests.oidc.dpop.conftest import Prover

from .conftest import ProductionNode

pytestmark = pytest.mark.postgresql

HOST = "id.example.org"
PUBLIC = f"https://{HOST}"  # the global load balancer's address: one issuer for both sites
REALM = "shop"
SECRET = "app-secret-" + "s" * 24
PASSWORD = "pass-word-1234"
USERS = ("ann", "bob", "carl", "dora", "erin", "fay")
CALLBACK = "http://app.test/cb"


class Site:
    def __init__(self, node):
        self.node = node
        self.oidc = f"{node.base}/realms/{REALM}/protocol/openid-connect"

    def post(self, path, data, **headers):
        return requests.post(self.oidc + path, data=data, headers={"Host": HOST, **headers}, timeout=10)

    def token(self, client_id="app", **data):
        return self.post("/token", {"client_id": client_id, "client_secret": SECRET, **data})

    def sign_in(self, username):
        answer = self.token(grant_type="password", username=username, password=PASSWORD, scope="openid")
        assert answer.status_code == 200, answer.text
        return answer.json()

    def active(self, token):
        return self.post("/token/introspect", {"client_id": "app", "client_secret": SECRET, "token": token}
                         ).json()["active"]

    def admin(self, method, path, body=None):
        token = requests.post(f"{self.node.base}/realms/master/protocol/openid-connect/token", timeout=10,
                              headers={"Host": HOST},
                              data={"grant_type": "password", "client_id": "admin-cli", "username": "root",
                                    "password": "root-pass-1"}).json()["access_token"]
        return requests.request(method, f"{self.node.base}/admin/realms/{REALM}{path}", json=body, timeout=30,
                                headers={"Authorization": f"Bearer {token}", "Host": HOST})

    def disable_user(self, username):
        user_id = self.admin("get", f"/users?username={username}&exact=true").json()[0]["id"]
        assert self.admin("put", f"/users/{user_id}", {"enabled": False}).status_code == 204


def within_a_second(check):
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < 1.0, "not seen by the other site within one second"
        time.sleep(0.02)


def lifespan(token):
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    return claims["exp"] - claims["iat"]


def kid(token):
    return json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))["kid"]


@pytest.fixture(scope="module")
def sites(pg_primary_with_standby, redis_servers, tmp_path_factory):
    primary, standby = pg_primary_with_standby
    redis_a = redis_servers()
    common = dict(IDP_HOSTNAME=HOST, IDP_BASE_URL=PUBLIC, IDP_SECRET_KEY="n" * 50, IDP_FEATURES="stateless",
                  IDP_BOOTSTRAP_ADMIN_USERNAME="root", IDP_BOOTSTRAP_ADMIN_PASSWORD="root-pass-1")
    # Site 1 beside the primary; site 2 names both servers and takes whichever accepts writes.
    a = Site(ProductionNode(tmp_path_factory.mktemp("site1"), IDP_DB_URL=primary.url,
                            IDP_REDIS_URL=redis_a.url, **common))
    b = Site(ProductionNode(tmp_path_factory.mktemp("site2"), IDP_REDIS_URL=redis_servers().url, **common,
                            IDP_DB_URL=f"postgresql://idp@127.0.0.1:{primary.port},127.0.0.1:{standby.port}/postgres"
                                       "?target_session_attrs=read-write&connect_timeout=2"))
    try:
        a.node.launch()
        b.node.launch()  # it waits for site 1's migrations (the start-up lock), then serves
        a.node.wait_ready()
        b.node.wait_ready()
        created = requests.post(f"{a.node.base}/admin/realms", timeout=30, headers={
            "Host": HOST, "Authorization": "Bearer " + requests.post(
                f"{a.node.base}/realms/master/protocol/openid-connect/token", headers={"Host": HOST}, timeout=10,
                data={"grant_type": "password", "client_id": "admin-cli", "username": "root",
                      "password": "root-pass-1"}).json()["access_token"]}, json={
            "realm": REALM, "enabled": True, "sslRequired": "none", "bruteForceProtected": True,
            "failureFactor": 2, "waitIncrementSeconds": 60,
            "clients": [{"clientId": cid, "secret": SECRET, "directAccessGrantsEnabled": True,
                         "serviceAccountsEnabled": True, "redirectUris": [CALLBACK]} for cid in ("app", "other")],
            "users": [{"username": name, "enabled": True, "email": f"{name}@example.org", "emailVerified": True,
                       "firstName": name.title(), "lastName": "Lee",
                       "credentials": [{"type": "password", "value": PASSWORD}]} for name in USERS],
        })
        assert created.status_code == 201, created.text
        yield a, b, primary, standby, redis_a
    finally:
        a.node.kill()
        b.node.kill()


def test_what_one_site_does_the_other_honours_within_a_second(sites):
    a, b, primary, _, _ = sites
    # A realm change: the other site's next token has the new lifespan.
    assert lifespan(b.token(grant_type="client_credentials").json()["access_token"]) == 300
    assert a.admin("put", "", {"accessTokenLifespan": 120}).status_code == 204
    within_a_second(lambda: lifespan(b.token(grant_type="client_credentials").json()["access_token"]) == 120)

    # A client disabled on one site is refused on the other.
    assert b.token("other", grant_type="client_credentials").status_code == 200
    other = a.admin("get", "/clients?clientId=other").json()[0]["id"]
    assert a.admin("put", f"/clients/{other}", {"enabled": False}).status_code == 204
    within_a_second(lambda: b.token("other", grant_type="client_credentials").status_code in (400, 401))

    # A new signing key of higher priority signs the other site's tokens.
    added = a.admin("post", "/components", {
        "name": "rotated", "providerId": "rsa-generated", "providerType": "org.keycloak.keys.KeyProvider",
        "config": {"priority": ["500"]}})
    assert added.status_code == 201, added.text
    newest = next(k["kid"] for k in a.admin("get", "/keys").json()["keys"]
                  if k.get("providerPriority") == 500 and k["algorithm"] == "RS256")
    within_a_second(lambda: kid(b.token(grant_type="client_credentials").json()["access_token"]) == newest)

    # Signed in on one site, refreshed on the other.
    ann = a.sign_in("ann")
    refreshed = b.token(grant_type="refresh_token", refresh_token=ann["refresh_token"])
    assert refreshed.status_code == 200, refreshed.text

    # An access token revoked on one site introspects as inactive on the other.
    access = refreshed.json()["access_token"]
    assert b.active(access)
    assert a.post("/revoke", {"client_id": "app", "client_secret": SECRET, "token": access}).status_code == 200
    within_a_second(lambda: not b.active(access))

    # A user disabled on one site can no longer refresh on the other.
    bob = a.sign_in("bob")
    assert b.token(grant_type="refresh_token", refresh_token=bob["refresh_token"]).status_code == 200
    a.disable_user("bob")
    within_a_second(lambda: b.token(grant_type="refresh_token", refresh_token=bob["refresh_token"]).status_code == 400)

    # Two wrong passwords on one site lock the user out on the other (failureFactor 2: the
    # failures are counted in the database, not in each site's Redis).
    for _ in range(2):
        assert a.token(grant_type="password", username="carl", password="wrong").status_code in (400, 401)
    within_a_second(lambda: b.token(grant_type="password", username="carl", password=PASSWORD).status_code != 200)

    # A sign-in begun on one site (its authentication session) is finished on the other.
    page = requests.get(a.oidc + "/auth", headers={"Host": HOST}, timeout=10, params={
        "client_id": "app", "redirect_uri": CALLBACK, "response_type": "code", "scope": "openid"})
    assert page.status_code == 200, page.text
    form_tag = re.search(r'<form[^>]*id="kc-form-login"[^>]*>', page.text)[0]
    form = html.unescape(re.search(r'action="([^"]+)"', form_tag)[1])
    hidden = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page.text))
    path = urlsplit(form)._replace(scheme="", netloc="").geturl()
    signed_in = requests.post(b.node.base + path, allow_redirects=False, timeout=10,
                              data={**hidden, "username": "ann", "password": PASSWORD},
                              headers={"Host": HOST, "Cookie": "; ".join(f"{c.name}={c.value}" for c in page.cookies)})
    assert signed_in.status_code == 302 and signed_in.headers["Location"].startswith(CALLBACK), signed_in.text
    code = parse_qs(urlsplit(signed_in.headers["Location"]).query)["code"][0]
    assert a.token(grant_type="authorization_code", code=code, redirect_uri=CALLBACK).status_code == 200

    # A DPoP proof used on one site is refused on the other (its jti is marked in the database).
    proof = Prover().proof("POST", f"{PUBLIC}/realms/{REALM}/protocol/openid-connect/token")
    bound = a.post("/token", {"client_id": "app", "client_secret": SECRET, "grant_type": "client_credentials"},
                   DPoP=proof)
    assert bound.status_code == 200 and bound.json()["token_type"] == "DPoP", bound.text
    replayed = b.post("/token", {"client_id": "app", "client_secret": SECRET, "grant_type": "client_credentials"},
                      DPoP=proof)
    assert replayed.status_code == 400 and replayed.json()["error"] == "invalid_dpop_proof", replayed.text

    # The global load balancer's probe, on each site's public port.
    for site in (a, b):
        probe = requests.get(site.node.base + "/lb-check", headers={"Host": HOST}, timeout=10)
        assert (probe.status_code, probe.text) == (200, "UP")

    # None of it went through a Redis the two sites share: they have none.
    assert a.node.env["IDP_REDIS_URL"] != b.node.env["IDP_REDIS_URL"]
    assert primary.query("SELECT sync_state FROM pg_stat_replication") == [("sync",)]


def test_the_other_site_carries_on_when_the_primary_site_is_lost(sites):
    a, b, primary, standby, redis_a = sites
    dora = a.sign_in("dora")
    revoked = a.sign_in("ann")["access_token"]
    assert a.post("/revoke", {"client_id": "app", "client_secret": SECRET, "token": revoked}).status_code == 200
    for _ in range(2):  # fay locked out (failureFactor 2)
        assert a.token(grant_type="password", username="fay", password="wrong").status_code in (400, 401)
    erin = a.sign_in("erin")
    a.disable_user("erin")  # the last thing site 1 committed

    # Site 1 is lost: its node, its Redis and the primary, with nothing flushed.
    a.node.kill()
    redis_a.kill()
    primary.stop()
    standby.promote()

    deadline = time.monotonic() + 15
    while b.token(grant_type="client_credentials").status_code != 200:
        assert time.monotonic() < deadline, "site 2 did not carry on after the promotion:\n" + b.node.log()[-3000:]
        time.sleep(0.2)
    # Every change committed before the loss is there.
    refreshed = b.token(grant_type="refresh_token", refresh_token=dora["refresh_token"])
    assert refreshed.status_code == 200, refreshed.text
    assert not b.active(revoked)
    assert b.active(refreshed.json()["access_token"])
    assert b.token(grant_type="refresh_token", refresh_token=erin["refresh_token"]).status_code == 400
    refused = b.token(grant_type="password", username="erin", password=PASSWORD)
    assert refused.status_code == 400 and refused.json()["error_description"] == "Account disabled"
    locked = b.token(grant_type="password", username="fay", password=PASSWORD)
    assert locked.status_code in (400, 401) and locked.json()["error"] == "invalid_grant", locked.text
    # And site 2 writes: a new sign-in and its refresh on the promoted standby.
    fresh = b.sign_in("dora")
    assert b.token(grant_type="refresh_token", refresh_token=fresh["refresh_token"]).status_code == 200
