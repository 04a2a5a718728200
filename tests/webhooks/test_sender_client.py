"""The sends on one event loop (decision 0111): ``sender.Client`` keeps ``realms.http.outbound``'s
rules for a prepared target (the checked address, TLS for the name, no redirects, a bounded
answer, timeouts), reads the ways an HTTP/1.1 answer can end, and keeps connections alive per
endpoint; the lanes send every delivery of the process from one loop thread."""
import asyncio
import dataclasses
import socket
import threading

import pytest
from django.core.exceptions import ImproperlyConfigured

from realms.http import outbound
from tests.realms.test_outbound import named_server, tls  # noqa: F401 (fixtures: outbound's own TLS receiver)
from tests.servers import Receiver
from webhooks import conf, delivery, dispatch, sender, services
from webhooks.models import Delivery
from webhooks.outbox import publish

from .workers import wait_until

pytestmark = pytest.mark.usefixtures("loopback_allowed")


def _post(target, body_limit=1024, timeout=5.0):
    async def go():
        client = sender.Client()
        try:
            return await client.request("POST", target, b"{}", {"webhook-id": "msg_1"}, timeout=timeout,
                                        connect_timeout=1.0, body_limit=body_limit)
        finally:
            client.close()
    return asyncio.run(go())


def test_connects_to_the_checked_address_with_sni_and_host_of_the_name(monkeypatch, named_server):
    target = outbound.prepare(f"https://hooks.test:{named_server.port}/in")
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["127.0.0.1"])  # a second answer: not used
    resp = _post(target)
    assert resp.status == 200
    assert named_server.sni == ["hooks.test"]
    assert named_server.requests[0]["headers"]["Host"] == f"hooks.test:{named_server.port}"
    assert named_server.requests[0]["headers"]["webhook-id"] == "msg_1"


def test_the_certificate_is_checked_against_the_name(named_server):
    with pytest.raises(sender.NoAnswer, match="SSLCertVerificationError"):
        _post(outbound.prepare(f"https://other-name.test:{named_server.port}/in"))
    assert named_server.requests == []


def test_redirects_are_not_followed_and_the_answer_is_bounded(named_server):
    other = Receiver("127.0.0.1")
    try:
        named_server.default = (302, {"Location": other.url()}, b"x" * 100_000)
        resp = _post(outbound.prepare(named_server.url(host="127.0.0.2")), body_limit=1024)
        assert (resp.status, resp.body) == (302, b"x" * 1024)
        assert len(named_server.requests) == 1 and other.requests == []
    finally:
        other.close()


class RawServer:
    """Answers every request on a connection with the next of ``answers`` (raw bytes; None: hang
    up instead; after one starting ``CLOSE:``, the rest of it, hang up); counts the connections
    it accepted."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.connections = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        with conn:
            buf = b""
            while self.answers:
                while b"\r\n\r\n" not in buf or len(buf.split(b"\r\n\r\n", 1)[1]) < 2:  # the body is "{}"
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                buf = buf.split(b"\r\n\r\n", 1)[1][2:]
                answer = self.answers.pop(0)
                if answer is None:
                    return
                conn.sendall(answer.removeprefix(b"CLOSE:"))
                if answer.startswith(b"CLOSE:"):
                    return

    def target(self):
        return outbound.prepare(f"http://127.0.0.1:{self.port}/hook")

    def close(self):
        self.sock.close()


@pytest.mark.parametrize("answer,body,reused", [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", b"ok", True),
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", b"", True),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x=1\r\nok\r\n3\r\n!!!\r\n0\r\nA: b\r\n\r\n", b"ok!!!", True),
    (b"HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n" + b"y" * 2048 + b"\r\n0\r\n\r\n", b"y" * 1024,
     False),  # not read to its end: the connection is not used again
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", b"ok", False),
    (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", b"ok", False),
])
def test_every_way_an_answer_ends_and_whether_its_connection_is_kept(answer, body, reused):
    server = RawServer([answer, answer])
    try:
        async def twice():
            client = sender.Client()
            try:
                return [await client.request("POST", server.target(), b"{}", {}, timeout=3.0, connect_timeout=1.0,
                                             body_limit=1024) for _ in range(2)]
            finally:
                client.close()
        first, second = asyncio.run(twice())
        assert first.body == second.body == body
        assert server.connections == (1 if reused else 2)
    finally:
        server.close()


def test_an_answer_ended_by_the_connection_is_read_to_the_end_or_the_limit():
    server = RawServer([b"CLOSE:HTTP/1.1 202 Accepted\r\n\r\naccepted", b"CLOSE:HTTP/1.1 202 Accepted\r\n\r\n" + b"z" * 5000])
    try:
        first, second = _post(server.target()), _post(server.target())
        assert (first.status, first.body, second.body) == (202, b"accepted", b"z" * 1024)
    finally:
        server.close()


@pytest.mark.parametrize("answers,error", [
    ([None], "ProtocolError"),  # the connection closed without an answer
    ([b"garbage\r\n\r\n"], "ProtocolError"),
])
def test_no_usable_answer_is_no_answer(answers, error):
    server = RawServer(answers)
    try:
        with pytest.raises(sender.NoAnswer, match=error):
            _post(server.target())
    finally:
        server.close()


def test_a_receiver_that_never_answers_times_out():
    server = RawServer([b"", None])  # reads the request, answers nothing, keeps the connection open
    try:
        with pytest.raises(sender.NoAnswer, match="ReadTimeoutError"):
            _post(server.target(), timeout=0.5)
    finally:
        server.close()


def test_a_refused_connection_is_no_answer():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(sender.NoAnswer, match="NewConnectionError"):
        _post(outbound.prepare(f"http://127.0.0.1:{port}/hook"))


@pytest.mark.django_db(transaction=True)
def test_the_lanes_send_on_one_loop_thread_over_kept_connections(realm, monkeypatch, settings):
    """Every send of the process runs on the lanes' one loop thread, and an endpoint's deliveries
    go over kept-alive connections: at most its concurrency of them, not one per delivery."""
    opened, threads = [], set()
    real_open = asyncio.open_connection

    async def counted(*args, **kwargs):
        opened.append(args[:2])
        return await real_open(*args, **kwargs)

    real_send = delivery.send

    async def watched(job, client):
        threads.add(threading.current_thread().name)
        return await real_send(job, client)

    monkeypatch.setattr(asyncio, "open_connection", counted)
    settings.IDP_WEBHOOK_INPROCESS = True  # deliveries refused a slot are pulled here, not by Celery
    sender.shutdown()
    lanes = sender.lanes(dataclasses.replace(delivery.WORK, send=watched))
    server = Receiver()
    try:
        endpoint = services.create_endpoint(realm, server.url(), [], max_concurrency=2)[0]
        for n in range(10):
            message = publish(realm, "auth.login", {"n": n}, endpoints=[endpoint])
            lanes.claim(list(Delivery.objects.filter(message=message).values_list("pk", flat=True)))
        assert wait_until(lambda: Delivery.objects.filter(endpoint=endpoint, state=Delivery.DELIVERED).count() == 10,
                          timeout=10)
        assert len(server.requests) == 10
        assert threads == {"webhooks-sender"}
        assert 1 <= len(opened) <= 2
        assert not [t for t in threading.enumerate() if t.name.startswith("webhooks-sender_")]  # no thread pool
    finally:
        dispatch.shutdown()
        server.close()


def test_a_retired_thread_setting_stops_the_start(settings):
    """The thread settings the event loop replaced would do nothing: the app refuses them by name."""
    conf.check_retired()
    settings.IDP_WEBHOOK_SLOW_LANE_THREADS = 32
    with pytest.raises(ImproperlyConfigured, match="IDP_WEBHOOK_SLOW_LANE_THREADS is no longer read: .*"
                                                   "set IDP_WEBHOOK_SLOW_LANE_SENDS"):
        conf.check_retired()
