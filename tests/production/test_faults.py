"""Faults behind HAProxy (issue 34 point 7; docs/operations/faults.md): a node killed under load
costs at most the requests it was serving and no session; PostgreSQL and Redis restarted under
the nodes are recovered from by the nodes themselves, with no restart."""
import json
import time

import pytest
import requests
from django.db import OperationalError
from redis.exceptions import ConnectionError as RedisConnectionError

from idp.views import server_error
from realms.data.shared_cache import CHECK_SECONDS
from tests.production.cluster import PASSWORD, REALM, SECRET, Load, cluster_fixture

CONCURRENCY = 4


@pytest.fixture(scope="module")
def cluster():
    yield from cluster_fixture()


@pytest.mark.parametrize("outage", [RedisConnectionError("Error 111 connecting to 127.0.0.1:6379."),
                                    OperationalError("connection refused")])
def test_an_outage_is_answered_503_to_retry_and_a_bug_stays_a_500(rf, outage):
    token = rf.post(f"/realms/{REALM}/protocol/openid-connect/token")
    try:
        raise outage
    except Exception:  # Django calls the handler inside its except block
        answer = server_error(token)
    assert answer.status_code == 503 and answer["Retry-After"] == "5"
    assert json.loads(answer.content) == {"error": "temporarily_unavailable",
                                          "error_description": "For more on this error consult the server log."}
    try:
        raise outage
    except Exception:
        page = server_error(rf.get(f"/realms/{REALM}/account/", HTTP_ACCEPT_LANGUAGE="en"))
    assert page.status_code == 503 and "An internal server error has occurred" in page.content.decode()
    assert "Error 111" not in page.content.decode() and "refused" not in answer.content.decode()
    try:
        raise KeyError("a bug")
    except Exception:
        bug = server_error(token)
    assert bug.status_code == 500 and "Retry-After" not in bug


def client_credentials(cluster):
    return lambda session: cluster.token(session, grant_type="client_credentials")


def ready(node):
    return requests.get(f"http://127.0.0.1:{node.mgmt}/health/ready", timeout=5)


def pids(cluster):
    return [node.proc.pid for node in cluster.nodes]


def first_success_after(cluster, moment, deadline_s=30):
    """Seconds from ``moment`` to the first client-credentials grant HAProxy gets answered."""
    deadline = time.monotonic() + deadline_s
    while cluster.token(grant_type="client_credentials").status_code != 200:
        assert time.monotonic() < deadline, "never recovered"
        time.sleep(0.05)
    return time.monotonic() - moment


@pytest.mark.postgresql
def test_a_node_killed_under_load_costs_at_most_the_requests_in_flight_and_no_session(cluster):
    a, b = cluster.nodes
    sessions = [cluster.sign_in() for _ in range(4)]
    with Load(client_credentials(cluster), concurrency=CONCURRENCY) as load:
        time.sleep(1)
        killed = time.monotonic()
        a.kill()  # SIGKILL: the node finishes nothing
        time.sleep(2)
    assert load.ok and load.ok_since(killed + 1.5), "the other node did not carry the load"
    # Only what the killed node had in hand failed: at most one request per client, all at the kill.
    assert len(load.failures) <= CONCURRENCY, load.failures
    assert all(killed - 0.1 <= t <= killed + 1 for t, _ in load.failures), load.failures
    for session in sessions:  # signed in before the kill, refreshed on the node left
        refreshed = cluster.token(grant_type="refresh_token", refresh_token=session["refresh_token"])
        assert refreshed.status_code == 200, refreshed.text
    a.start()
    cluster.wait_status("UP", a)


@pytest.mark.postgresql
def test_nodes_recover_by_themselves_within_five_seconds_of_postgresql_s_return(cluster):
    before = pids(cluster)
    session = cluster.sign_in()
    cluster.db.stop_fast()
    try:
        for node in cluster.nodes:
            down = ready(node)
            assert down.status_code == 503
            assert {"name": "database", "status": "DOWN"}.items() <= next(
                c for c in down.json()["checks"] if c["name"] == "database").items()
        assert cluster.token(grant_type="client_credentials").status_code == 503  # HAProxy: no server
        assert_closed(direct(cluster.nodes[0], grant_type="client_credentials"))
    finally:
        cluster.db.start()  # -w: returns once it accepts connections
    back = time.monotonic()
    assert first_success_after(cluster, back) <= 5
    cluster.wait_status("UP", *cluster.nodes, deadline_s=5)
    assert pids(cluster) == before  # no node was restarted
    for _ in range(2):  # each node serves, the session made before included
        refreshed = cluster.token(grant_type="refresh_token", refresh_token=session["refresh_token"])
        assert refreshed.status_code == 200, refreshed.text
        session = refreshed.json()


def direct(node, **data):
    """A token request sent to a node itself, as in the moment before HAProxy sees it down."""
    return requests.post(f"{node.base}/realms/{REALM}/protocol/openid-connect/token", timeout=10,
                         data={"client_id": "app", "client_secret": SECRET, **data})


def assert_closed(answer):
    assert answer.status_code == 503 and answer.headers["Retry-After"] == "5", answer.text
    assert answer.json()["error"] == "temporarily_unavailable"


@pytest.mark.postgresql
def test_redis_down_closes_the_service_and_is_recovered_from_without_restart(cluster):
    before = pids(cluster)
    session = cluster.sign_in()
    node = cluster.nodes[0]
    cluster.redis.kill()
    killed = time.monotonic()
    try:
        for each in cluster.nodes:
            down = ready(each)
            assert down.status_code == 503
            assert next(c for c in down.json()["checks"] if c["name"] == "redis")["status"] == "DOWN"
        cluster.wait_status("DOWN", *cluster.nodes, deadline_s=3)
        assert cluster.token(grant_type="client_credentials").status_code == 503  # HAProxy: no server
        # Each feature that needs Redis refuses rather than guess: no token without the realm's
        # cache generations and revocations, no sign-in without the brute-force counters, no DPoP
        # proof without its replay mark; a 503 to retry, never a 500 nor a token. A node uses its
        # copy of the realm for CHECK_SECONDS before it asks Redis for the generation again: the
        # grant is refused once that has passed since the outage began (HAProxy may see it sooner).
        time.sleep(max(0.0, CHECK_SECONDS + 0.2 - (time.monotonic() - killed)))
        assert_closed(direct(node, grant_type="client_credentials"))
        assert_closed(direct(node, grant_type="password", username="ann", password=PASSWORD))
        assert_closed(direct(node, grant_type="refresh_token", refresh_token=session["refresh_token"]))
        login_page = requests.get(f"{node.base}/realms/{REALM}/account/", timeout=10)
        assert login_page.status_code == 503 and "internal server error" in login_page.text.lower()
    finally:
        cluster.redis.restart()  # empty: what it held is gone
    back = time.monotonic()
    assert first_success_after(cluster, back) <= 5
    cluster.wait_status("UP", *cluster.nodes, deadline_s=5)
    assert pids(cluster) == before
    # SSO sessions are in the database: the one made before refreshes on both nodes.
    for _ in range(2):
        refreshed = cluster.token(grant_type="refresh_token", refresh_token=session["refresh_token"])
        assert refreshed.status_code == 200, refreshed.text
        session = refreshed.json()
    assert cluster.sign_in()["access_token"]
