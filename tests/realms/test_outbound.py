"""The outbound address policy (``realms.http.outbound``; spec 2 §8 for webhooks, and every call to a
client's JWKS or logout URL): https only, non-public addresses refused, the checked address is the
one connected to, no redirects, truncated bodies. Production mode unless said."""
import json
import socket

import pytest

from realms.http import outbound
from realms.http.outbound import OutboundError, TargetRefused
from tests.servers import Receiver, make_tls_files

NON_PUBLIC = [
    "127.0.0.1", "127.1.2.3", "10.0.0.1", "10.255.255.254", "172.16.0.1", "192.168.1.1", "169.254.169.254",
    "100.64.0.1", "0.0.0.0", "224.0.0.1", "239.255.255.250", "255.255.255.255", "198.18.0.1", "192.0.2.1",
    "::1", "::", "fc00::1", "fd12:3456:789a::1", "fe80::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
    "::ffff:169.254.169.254", "64:ff9b::a00:1", "2002:a00:1::1", "2001:db8::1",
]
PUBLIC = ["93.184.216.34", "1.1.1.1", "8.8.8.8", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e"]


def _post(target, headers=None, body_limit=1024):
    return outbound.request("POST", target, b"{}", headers or {}, timeout=5.0, body_limit=body_limit)


@pytest.mark.parametrize("address", NON_PUBLIC)
def test_non_public_addresses(address):
    assert not outbound.is_public(address)


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses(address):
    assert outbound.is_public(address)


@pytest.mark.parametrize("answer", [
    ["127.0.0.1"], ["10.1.2.3"], ["169.254.169.254"], ["::1"], ["fc00::5"], ["::ffff:127.0.0.1"],
    ["93.184.216.34", "10.0.0.7"],  # one private answer among public ones is enough to refuse
])
def test_names_resolving_to_non_public_addresses_are_refused(monkeypatch, answer):
    monkeypatch.setattr(outbound, "resolve", lambda host, port: answer)
    with pytest.raises(TargetRefused, match="non-public"):
        outbound.prepare("https://hooks.example.com/in")


def test_public_name_is_prepared_with_its_checked_address(monkeypatch):
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["93.184.216.34"])
    target = outbound.prepare("https://hooks.example.com/in?x=1")
    assert (target.host, target.address, target.port, target.path) == ("hooks.example.com", "93.184.216.34", 443, "/in?x=1")


@pytest.mark.parametrize("url", [
    "http://hooks.example.com/", "ftp://hooks.example.com/", "file:///etc/passwd", "gopher://x/",
    "https:///nohost", "https://user:pw@hooks.example.com/", "https://hooks.example.com:99999/",
])
def test_bad_urls_are_refused_in_production(url):
    with pytest.raises(TargetRefused):
        outbound.prepare(url)


@pytest.fixture
def counting_server():
    """A plain TCP listener on loopback that counts connections: proof of no contact."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.1)
    yield srv
    srv.close()


def _connections(srv):
    n = 0
    try:
        while True:
            conn, _ = srv.accept()
            conn.close()
            n += 1
    except TimeoutError:
        return n


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]", "[::ffff:127.0.0.1]", "10.0.0.1",
                                  "169.254.169.254", "[fc00::1]", "[fd00::1]"])
def test_ip_literals_and_localhost_are_refused_without_connecting(counting_server, host):
    port = counting_server.getsockname()[1]
    with pytest.raises(TargetRefused):
        outbound.prepare(f"https://{host}:{port}/hook")
    assert _connections(counting_server) == 0


@pytest.fixture
def tls(tmp_path, settings):
    ca, cert, key = make_tls_files(tmp_path)
    settings.IDP_OUTBOUND_CA_BUNDLE = ca
    return cert, key


@pytest.fixture
def named_server(monkeypatch, settings, tls):
    """A TLS server for the name ``hooks.test``, which resolves (once) to its allowlisted address."""
    server = Receiver("127.0.0.2", tls=tls, default=(200, {"Content-Type": "application/json"}, b'{"keys": []}'))
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["127.0.0.2"])
    yield server
    server.close()


def test_connects_to_the_checked_address_with_sni_and_host_of_the_name(monkeypatch, named_server):
    target = outbound.prepare(f"https://hooks.test:{named_server.port}/in")
    # A second DNS answer (rebinding) must not matter: the request goes to the checked address.
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["127.0.0.1"])
    looked_up = []
    real = socket.getaddrinfo
    monkeypatch.setattr(socket, "getaddrinfo", lambda h, *a, **k: looked_up.append(h) or real(h, *a, **k))
    resp = _post(target, {"webhook-id": "msg_1"})
    assert resp.status == 200
    assert named_server.sni == ["hooks.test"]
    assert named_server.requests[0]["headers"]["Host"] == f"hooks.test:{named_server.port}"
    assert "hooks.test" not in looked_up


def test_certificate_is_checked_against_the_name(named_server):
    target = outbound.prepare(f"https://other-name.test:{named_server.port}/in")
    with pytest.raises(outbound.HTTPError):
        _post(target)
    assert named_server.requests == []


@pytest.mark.parametrize("location", ["https://127.0.0.1:{port}/x", "http://169.254.169.254/latest/meta-data/",
                                      "https://[::1]:{port}/", "https://10.0.0.1/"])
def test_redirects_are_not_followed(named_server, location):
    target_server = Receiver("127.0.0.1")
    try:
        named_server.default = (302, {"Location": location.format(port=target_server.port)}, b"")
        resp = _post(outbound.prepare(named_server.url(host="127.0.0.2")))
        assert resp.status == 302
        assert len(named_server.requests) == 1 and target_server.requests == []
    finally:
        target_server.close()


def test_response_body_is_truncated(named_server):
    named_server.default = (500, {}, b"x" * 100_000)
    resp = _post(outbound.prepare(named_server.url(host="127.0.0.2")), body_limit=1024)
    assert resp.status == 500 and resp.body == b"x" * 1024


def test_dev_mode_allows_http_and_loopback_with_a_warning(settings, caplog, monkeypatch):
    settings.IDP_DEV_MODE = True
    monkeypatch.setattr(outbound, "_warned", set())
    server = Receiver("127.0.0.1")
    try:
        target = outbound.prepare(server.url())
        assert _post(target).status == 200
        assert sum("allowed by configuration" in r.getMessage() for r in caplog.records) == 1
        outbound.prepare(server.url())  # the same target again: logged once per process
        assert sum("allowed by configuration" in r.getMessage() for r in caplog.records) == 1
    finally:
        server.close()


def test_allowlist_does_not_open_other_private_ranges(settings, monkeypatch):
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["10.0.0.1"])
    with pytest.raises(TargetRefused):
        outbound.prepare("https://hooks.test/")
    with pytest.raises(TargetRefused):
        outbound.prepare("https://127.0.0.1/")


def test_dev_mode_does_not_open_private_networks(settings, monkeypatch):
    settings.IDP_DEV_MODE = True
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["10.0.0.1"])
    with pytest.raises(TargetRefused, match="non-public"):
        outbound.prepare("http://jwks.test/")


def test_http_needs_its_own_permission_even_to_an_allowed_network(settings):
    settings.IDP_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    with pytest.raises(TargetRefused, match="only https"):
        outbound.prepare("http://127.0.0.1/")
    settings.IDP_OUTBOUND_ALLOW_HTTP = True
    assert outbound.prepare("http://127.0.0.1:8/").address == "127.0.0.1"


# One-shot calls (a client's JWKS, back-channel logout): the same rules, their own connection.

@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]", "[::ffff:127.0.0.1]"])
def test_one_shot_calls_refuse_non_public_targets_without_connecting(counting_server, host):
    port = counting_server.getsockname()[1]
    with pytest.raises(TargetRefused, match="non-public"):
        outbound.fetch_json(f"https://{host}:{port}/certs")
    with pytest.raises(TargetRefused, match="non-public"):
        outbound.post(f"https://{host}:{port}/logout", b"logout_token=x")
    assert _connections(counting_server) == 0


def test_fetch_json_connects_to_the_checked_address_and_keeps_no_connection(named_server):
    pools = dict(outbound._pools)
    assert outbound.fetch_json(f"https://hooks.test:{named_server.port}/certs?x=1") == {"keys": []}
    request = named_server.requests[0]
    assert (request["method"], request["path"]) == ("GET", "/certs?x=1")
    assert request["headers"]["Host"] == f"hooks.test:{named_server.port}" and named_server.sni == ["hooks.test"]
    assert outbound._pools == pools


@pytest.mark.parametrize("reply, error", [
    ((302, {"Location": "http://169.254.169.254/latest/meta-data/"}, b""), "HTTP 302"),
    ((404, {}, b"{}"), "HTTP 404"),
    ((200, {}, b"<html>"), "not JSON"),
    ((200, {}, json.dumps({"keys": ["k" * 1000] * 300}).encode()), "document too large"),
])
def test_fetch_json_refuses_anything_but_a_bounded_json_200(named_server, reply, error):
    named_server.default = reply
    with pytest.raises(OutboundError, match=error):
        outbound.fetch_json(f"https://hooks.test:{named_server.port}/certs")
    assert len(named_server.requests) == 1  # the redirect is not followed


def test_fetch_json_checks_the_certificate_against_the_name(named_server):
    with pytest.raises(OutboundError):
        outbound.fetch_json(f"https://other-name.test:{named_server.port}/certs")
    assert named_server.requests == []


def test_post_sends_once_to_the_checked_address(named_server):
    pools = dict(outbound._pools)
    named_server.default = (302, {"Location": "https://10.0.0.1/"}, b"")
    resp = outbound.post(f"https://hooks.test:{named_server.port}/logout", b"logout_token=t",
                         {"Content-Type": "application/x-www-form-urlencoded"})
    assert resp.status == 302 and len(named_server.requests) == 1
    request = named_server.requests[0]
    assert (request["method"], request["path"], request["body"]) == ("POST", "/logout", b"logout_token=t")
    assert request["headers"]["Host"] == f"hooks.test:{named_server.port}" and named_server.sni == ["hooks.test"]
    assert outbound._pools == pools
