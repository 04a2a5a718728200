"""Network partitions (docs/operations/faults.md, decision 0108): a relay that stops forwarding
without closing (tests/production/relay.py) between one node and PostgreSQL, then between it and
Redis, as a lost route does: no refusal, no reset, just silence. Requests the node takes fail
within the configured timeouts instead of hanging, its readiness goes DOWN so HAProxy takes it out,
the other node serves meanwhile, and once the route is back the node serves again within five
seconds by itself. With two sites (feature ``stateless``), site B's node cut from the primary is
not ready while site A serves, and what A committed meanwhile is on the synchronous standby and,
once the route is back, seen by B."""
import time

import pytest
import requests

from idp.config import _setting_problems, database_from_url, redis_cache
from tests.production.cluster import PASSWORD, REALM, SECRET, cluster_fixture
from tests.production.conftest import ProductionNode
from tests.production.relay import Relay
from tests.production.test_two_sites import HOST, PUBLIC, Site
from tests.production.test_two_sites import PASSWORD as SITE_PASSWORD  # what Site.sign_in sends

pytestmark = pytest.mark.postgresql
CONNECT_TIMEOUT = 2  # IDP_DB_URL's connect_timeout (libpq's)
DB_SOCKET_TIMEOUT = 3  # IDP_DB_SOCKET_TIMEOUT
REDIS_SOCKET_TIMEOUT = 1  # IDP_REDIS_SOCKET_TIMEOUT (its default, 5 s, would overrun the bound below)
SLACK = 3  # a shared, busy machine


@pytest.fixture(scope="module")
def cut():
    """(cluster, relay to PostgreSQL, relay to Redis): node1 reaches both through its relays,
    node2 directly."""
    relays = []

    def through_relays(cluster):
        relays.extend([Relay(cluster.db.port), Relay(cluster.redis.port)])
        cluster.nodes[0].env.update(
            IDP_DB_URL=f"postgresql://idp@127.0.0.1:{relays[0].port}/postgres?connect_timeout={CONNECT_TIMEOUT}",
            IDP_REDIS_URL=f"redis://127.0.0.1:{relays[1].port}/0",
            IDP_DB_SOCKET_TIMEOUT=str(DB_SOCKET_TIMEOUT), IDP_REDIS_SOCKET_TIMEOUT=str(REDIS_SOCKET_TIMEOUT))

    try:
        for cluster in cluster_fixture(through_relays):
            yield cluster, *relays
    finally:
        for relay in relays:
            relay.close()


def test_the_timeouts_are_read_and_an_unreadable_one_is_named(monkeypatch):
    monkeypatch.setenv("IDP_DB_SOCKET_TIMEOUT", "soon")
    monkeypatch.setenv("IDP_REDIS_SOCKET_TIMEOUT", "7")
    assert "IDP_DB_SOCKET_TIMEOUT: 'soon' is not a number" in _setting_problems()
    assert database_from_url("postgresql://idp@db/idp")["SOCKET_TIMEOUT"] == 30.0  # the default, until fixed
    assert redis_cache("redis://r:6379/0")["OPTIONS"] == {"socket_connect_timeout": 7.0, "socket_timeout": 7.0}
    monkeypatch.setenv("IDP_REDIS_SOCKET_TIMEOUT", "0")  # no limit
    assert redis_cache("redis://r:6379/0")["OPTIONS"] == {"socket_connect_timeout": None, "socket_timeout": None}


def timed(call):
    started = time.monotonic()
    answer = call()
    return answer, time.monotonic() - started


def sign_in_at(node):
    """A password grant sent to ``node`` itself: it reads the user and writes a session."""
    return requests.post(f"{node.base}/realms/{REALM}/protocol/openid-connect/token", timeout=60, data={
        "client_id": "app", "client_secret": SECRET, "grant_type": "password", "username": "ann",
        "password": PASSWORD})


def ready(node):
    return requests.get(f"http://127.0.0.1:{node.mgmt}/health/ready", timeout=60)


def check(answer, name):
    return next(c for c in answer.json()["checks"] if c["name"] == name)["status"]


def partitioned(cluster, relay, dependency, request_bound):
    """Cut ``relay``; what the cut node and the cluster do; heal; seconds to the node's recovery."""
    node, other = cluster.nodes
    pid = node.proc.pid
    assert sign_in_at(node).status_code == 200  # the node holds a live connection when the route goes
    relay.blackhole()
    try:
        answer, took = timed(lambda: sign_in_at(node))
        assert answer.status_code == 503 and answer.headers["Retry-After"] == "5", answer.text
        assert took < request_bound, f"{took:.1f} s"
        health, took = timed(lambda: ready(node))
        assert health.status_code == 503 and check(health, dependency) == "DOWN", health.text
        assert took < CONNECT_TIMEOUT + SLACK, f"readiness took {took:.1f} s"
        cluster.wait_status("DOWN", node, deadline_s=10)
        assert cluster.status(other) == "UP"
        for _ in range(6):  # every request through HAProxy goes to the node left, and succeeds
            assert cluster.sign_in()["access_token"]
        assert check(ready(other), dependency) == "UP"
    finally:
        relay.heal()
    healed = time.monotonic()
    deadline = healed + 5
    while sign_in_at(node).status_code != 200:
        assert time.monotonic() < deadline, node.log()[-3000:]
        time.sleep(0.05)
    recovered = time.monotonic() - healed
    assert ready(node).status_code == 200
    cluster.wait_status("UP", node, deadline_s=5)
    assert node.proc.pid == pid and node.proc.poll() is None  # by itself, not restarted
    return recovered


def test_a_node_cut_from_postgresql_fails_fast_leaves_the_balancer_and_recovers(cut):
    cluster, db_relay, _ = cut
    # A statement on the connection the node holds waits DB_SOCKET_TIMEOUT, then each new
    # connection attempt (the error page's, say) CONNECT_TIMEOUT.
    recovered = partitioned(cluster, db_relay, "database", DB_SOCKET_TIMEOUT + 2 * CONNECT_TIMEOUT + SLACK)
    print(f"PostgreSQL partition healed: node serving again after {recovered:.2f} s")


def test_a_node_cut_from_redis_fails_fast_leaves_the_balancer_and_recovers(cut):
    cluster, _, redis_relay = cut
    recovered = partitioned(cluster, redis_relay, "redis", 2 * REDIS_SOCKET_TIMEOUT + SLACK)
    print(f"Redis partition healed: node serving again after {recovered:.2f} s")


def test_site_b_cut_from_the_primary_is_not_ready_and_site_a_s_writes_are_kept(
        pg_primary_with_standby, redis_servers, tmp_path_factory):
    primary, standby = pg_primary_with_standby
    relay = Relay(primary.port)
    common = dict(IDP_HOSTNAME=HOST, IDP_BASE_URL=PUBLIC, IDP_SECRET_KEY="p" * 50, IDP_FEATURES="stateless",
                  IDP_BOOTSTRAP_ADMIN_USERNAME="root", IDP_BOOTSTRAP_ADMIN_PASSWORD="root-pass-1")
    a = Site(ProductionNode(tmp_path_factory.mktemp("site-a"), IDP_DB_URL=primary.url,
                            IDP_REDIS_URL=redis_servers().url, **common))
    # Site B takes whichever of the primary (through the relay) and the standby accepts writes.
    b = Site(ProductionNode(tmp_path_factory.mktemp("site-b"), IDP_REDIS_URL=redis_servers().url, **common,
                            IDP_DB_SOCKET_TIMEOUT=str(DB_SOCKET_TIMEOUT),
                            IDP_DB_URL=f"postgresql://idp@127.0.0.1:{relay.port},127.0.0.1:{standby.port}/postgres"
                                       f"?target_session_attrs=read-write&connect_timeout={CONNECT_TIMEOUT}"))
    try:
        a.node.start()
        b.node.start()
        admin = requests.post(f"{a.node.base}/realms/master/protocol/openid-connect/token", headers={"Host": HOST},
                              timeout=10, data={"grant_type": "password", "client_id": "admin-cli",
                                                "username": "root", "password": "root-pass-1"}).json()["access_token"]
        assert requests.post(f"{a.node.base}/admin/realms", timeout=30, json={
            "realm": REALM, "enabled": True, "sslRequired": "none", "clients": [
                {"clientId": "app", "secret": SECRET, "directAccessGrantsEnabled": True,
                 "serviceAccountsEnabled": True}]},
            headers={"Host": HOST, "Authorization": f"Bearer {admin}"}).status_code == 201
        assert b.token(grant_type="client_credentials").status_code == 200
        relay.blackhole()
        try:
            health, took = timed(lambda: ready(b.node))
            assert health.status_code == 503 and check(health, "database") == "DOWN", health.text
            assert took < CONNECT_TIMEOUT + SLACK, f"readiness took {took:.1f} s"
            answer, took = timed(lambda: b.token(grant_type="client_credentials"))
            assert answer.status_code == 503, answer.text
            assert took < DB_SOCKET_TIMEOUT + 2 * CONNECT_TIMEOUT + SLACK, f"{took:.1f} s"
            # Site A writes on: a user, committed on the primary and (synchronously) the standby.
            created = a.admin("post", "/users", {
                "username": "gil", "enabled": True, "email": "gil@example.org", "emailVerified": True,
                "firstName": "Gil", "lastName": "Lee",
                "credentials": [{"type": "password", "value": SITE_PASSWORD, "temporary": False}]})
            assert created.status_code == 201, created.text
            assert a.sign_in("gil")["access_token"]
            assert standby.query("SELECT count(*) FROM realms_user WHERE username = 'gil'") == [(1,)]
        finally:
            relay.heal()
        healed = time.monotonic()
        while ready(b.node).status_code != 200:
            assert time.monotonic() < healed + 5, b.node.log()[-3000:]
            time.sleep(0.05)
        assert b.sign_in("gil")["access_token"]  # what A wrote during the partition, B now sees
    finally:
        a.node.kill()
        b.node.kill()
        relay.close()


def test_a_publish_to_a_broker_cut_off_fails_within_the_redis_timeout(monkeypatch):
    """Celery's broker connection (kombu) waits as long as Redis lets it unless told: a request
    that queues background work on a node cut from Redis would hang. The broker takes
    IDP_REDIS_SOCKET_TIMEOUT as the cache does."""
    import os
    import threading
    from urllib.parse import urlparse

    from django.conf import settings
    from kombu import Connection

    from idp.celery import app
    from idp.config import redis_socket_options

    assert app.conf.broker_transport_options == settings.CELERY_BROKER_TRANSPORT_OPTIONS == redis_socket_options()
    monkeypatch.setenv("IDP_REDIS_SOCKET_TIMEOUT", str(REDIS_SOCKET_TIMEOUT))
    relay = Relay(urlparse(os.environ["IDP_TEST_REDIS_URL"]).port)
    outcome = []
    try:
        with Connection(f"redis://127.0.0.1:{relay.port}/0", transport_options=redis_socket_options()) as broker:
            producer = broker.Producer()
            producer.publish({"probe": 1}, routing_key="partition-probe", retry=False)  # through the relay
            relay.blackhole()

            def publish():
                try:
                    producer.publish({"probe": 2}, routing_key="partition-probe", retry=False)
                    outcome.append("sent")
                except Exception as error:  # redis' TimeoutError, as kombu raises it
                    outcome.append(type(error).__name__)

            started = time.monotonic()
            worker = threading.Thread(target=publish, daemon=True)
            worker.start()
            worker.join(REDIS_SOCKET_TIMEOUT + SLACK)
            assert not worker.is_alive(), "the publish still waits on the cut broker"
            assert outcome and outcome[0] != "sent", outcome
            assert time.monotonic() - started < REDIS_SOCKET_TIMEOUT + SLACK
    finally:
        relay.close()
