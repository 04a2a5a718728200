"""Two production nodes behind HAProxy configured by docs/operations/haproxy.cfg itself (issue 34
point 1): a session moves between nodes, the address the nodes believe is HAProxy's, a node
stopped under load and a rolling restart of both cost no request and no session."""
import time

import pytest
import requests

from tests.production.cluster import PASSWORD, REALM, SECRET, SHUTDOWN_DELAY, Load, cluster_fixture

pytestmark = pytest.mark.postgresql
TOKEN_PATH = f"/realms/{REALM}/protocol/openid-connect/token"
LOGOUT_PATH = f"/realms/{REALM}/protocol/openid-connect/logout"


@pytest.fixture(scope="module")
def cluster():
    yield from cluster_fixture()


def client_credentials(cluster):
    return lambda session: cluster.token(session, grant_type="client_credentials")


def test_sign_in_on_one_node_refresh_and_log_out_on_the_other(cluster):
    signed_in, signer = cluster.served_by(TOKEN_PATH, cluster.sign_in)
    # Round robin: the next request goes to the other node.
    refreshed, refresher = cluster.served_by(
        TOKEN_PATH, lambda: cluster.token(grant_type="refresh_token", refresh_token=signed_in["refresh_token"]))
    assert refreshed.status_code == 200, refreshed.text
    assert refresher is not signer
    requests.get(f"{cluster.base}/realms/{REALM}", timeout=10)  # one for the signer, in turn
    logged_out, logout_node = cluster.served_by(LOGOUT_PATH, lambda: requests.post(
        f"{cluster.base}{LOGOUT_PATH}", timeout=10,
        data={"client_id": "app", "client_secret": SECRET, "refresh_token": refreshed.json()["refresh_token"]}))
    assert logged_out.status_code == 204, logged_out.text
    assert logout_node is refresher
    # Logged out on one node: neither serves the session's refresh token any more.
    refusers = set()
    for _ in range(2):
        again, node = cluster.served_by(TOKEN_PATH, lambda: cluster.token(
            grant_type="refresh_token", refresh_token=refreshed.json()["refresh_token"]))
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant", again.text
        refusers.add(node.name)
    assert refusers == {"node1", "node2"}


def test_a_node_stopped_under_load_is_drained_first_and_costs_no_request(cluster):
    a, b = cluster.nodes
    with Load(client_credentials(cluster)) as load:
        time.sleep(1)
        a.proc.terminate()  # SIGTERM, as an orchestrator stops a node
        cluster.wait_status("DOWN", a, deadline_s=SHUTDOWN_DELAY)
        # HAProxy took it out while it was still serving: readiness went down first.
        assert a.proc.poll() is None
        stopped = time.monotonic()
        a.stop()
        time.sleep(1)
    assert not load.failures, load.failures[:5]
    assert len(load.ok_since(stopped)) > 10  # the other node carried the load
    a.start()
    cluster.wait_status("UP", a)


def test_sso_sessions_survive_a_rolling_restart_under_load(cluster):
    sessions = [cluster.sign_in() for _ in range(4)]
    with Load(client_credentials(cluster)) as load:
        for node in cluster.nodes:
            node.stop()
            node.start()
            cluster.wait_status("UP", node)
        time.sleep(0.5)
    assert not load.failures, load.failures[:5]
    assert len(load.ok) > 50
    for session in sessions:  # each refreshed through both restarted nodes
        token = session["refresh_token"]
        for _ in range(2):
            refreshed = cluster.token(grant_type="refresh_token", refresh_token=token)
            assert refreshed.status_code == 200, refreshed.text
            token = refreshed.json()["refresh_token"]


def test_the_nodes_believe_the_address_haproxy_saw_not_a_header_the_client_sent(cluster):
    spoofed = {"X-Forwarded-For": "203.0.113.9"}

    def newest_login_address():
        return cluster.admin("get", f"/{REALM}/events?type=LOGIN&max=1").json()[0]["ipAddress"]

    assert requests.post(f"{cluster.oidc}/token", headers=spoofed, timeout=10, data={
        "client_id": "app", "client_secret": SECRET, "grant_type": "password", "username": "ann",
        "password": PASSWORD}).status_code == 200
    assert newest_login_address() == "127.0.0.1"  # HAProxy replaced the header with what it saw
    # Sent to a node by its trusted proxy, the header is believed: HAProxy's replacing it matters.
    node = cluster.nodes[0]
    assert requests.post(f"{node.base}/realms/{REALM}/protocol/openid-connect/token", headers=spoofed,
                         timeout=10, data={"client_id": "app", "client_secret": SECRET, "grant_type": "password",
                                           "username": "ann", "password": PASSWORD}).status_code == 200
    assert newest_login_address() == "203.0.113.9"


def test_the_nodes_believe_the_scheme_haproxy_saw_not_a_header_the_client_sent(cluster):
    realm_id = f"/{REALM}"
    data = {"client_id": "app", "client_secret": SECRET, "grant_type": "client_credentials"}

    def seen_by_both(status):
        """Until each node answers plain HTTP with ``status`` (a realm change reaches every node
        within a second)."""
        deadline = time.monotonic() + 3
        for node in cluster.nodes:
            url = f"{node.base}/realms/{REALM}/protocol/openid-connect/token"
            while requests.post(url, data=data, timeout=10).status_code != status:
                assert time.monotonic() < deadline, f"{node.name} did not see the change"
                time.sleep(0.05)

    assert cluster.admin("put", realm_id, {"sslRequired": "all"}).status_code == 204
    try:
        seen_by_both(403)
        spoofed = {"X-Forwarded-Proto": "https"}
        # Plain HTTP to HAProxy: it says "http" whatever the client claimed, and the realm refuses.
        through = requests.post(f"{cluster.oidc}/token", headers=spoofed, data=data, timeout=10)
        assert through.status_code == 403 and through.json()["error_description"] == "HTTPS required", through.text
        # From its trusted proxy, a node believes the header: HAProxy's setting it is what matters.
        node = cluster.nodes[0]
        direct = requests.post(f"{node.base}/realms/{REALM}/protocol/openid-connect/token", headers=spoofed,
                               data=data, timeout=10)
        assert direct.status_code == 200, direct.text
    finally:
        assert cluster.admin("put", realm_id, {"sslRequired": "none"}).status_code == 204
        seen_by_both(200)
