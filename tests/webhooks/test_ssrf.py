"""SSRF defence of the sender (spec 2 §8): https only, non-public addresses refused, the checked
address is the one connected to, no redirects, truncated bodies. Production mode unless said."""
import socket

import pytest

from webhooks import http
from webhooks.http import TargetRefused

from .servers import Receiver, make_tls_files

NON_PUBLIC = [
    "127.0.0.1", "127.1.2.3", "10.0.0.1", "10.255.255.254", "172.16.0.1", "192.168.1.1", "169.254.169.254",
    "100.64.0.1", "0.0.0.0", "224.0.0.1", "239.255.255.250", "255.255.255.255", "198.18.0.1", "192.0.2.1",
    "::1", "::", "fc00::1", "fd12:3456:789a::1", "fe80::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
    "::ffff:169.254.169.254", "64:ff9b::a00:1", "2002:a00:1::1", "2001:db8::1",
]
PUBLIC = ["93.184.216.34", "1.1.1.1", "8.8.8.8", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e"]


@pytest.mark.parametrize("address", NON_PUBLIC)
def test_non_public_addresses(address):
    assert not http.is_public(address)


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses(address):
    assert http.is_public(address)


@pytest.mark.parametrize("answer", [
    ["127.0.0.1"], ["10.1.2.3"], ["169.254.169.254"], ["::1"], ["fc00::5"], ["::ffff:127.0.0.1"],
    ["93.184.216.34", "10.0.0.7"],  # one private answer among public ones is enough to refuse
])
def test_names_resolving_to_non_public_addresses_are_refused(monkeypatch, answer):
    monkeypatch.setattr(http, "resolve", lambda host, port: answer)
    with pytest.raises(TargetRefused, match="non-public"):
        http.prepare("https://hooks.example.com/in")


def test_public_name_is_prepared_with_its_checked_address(monkeypatch):
    monkeypatch.setattr(http, "resolve", lambda host, port: ["93.184.216.34"])
    target = http.prepare("https://hooks.example.com/in?x=1")
    assert (target.host, target.address, target.port, target.path) == ("hooks.example.com", "93.184.216.34", 443, "/in?x=1")


@pytest.mark.parametrize("url", [
    "http://hooks.example.com/", "ftp://hooks.example.com/", "file:///etc/passwd", "gopher://x/",
    "https:///nohost", "https://user:pw@hooks.example.com/", "https://hooks.example.com:99999/",
])
def test_bad_urls_are_refused_in_production(url):
    with pytest.raises(TargetRefused):
        http.prepare(url)


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
    except (TimeoutError, socket.timeout):
        return n


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]", "[::ffff:127.0.0.1]", "10.0.0.1",
                                  "169.254.169.254", "[fc00::1]", "[fd00::1]"])
def test_ip_literals_and_localhost_are_refused_without_connecting(counting_server, host):
    port = counting_server.getsockname()[1]
    with pytest.raises(TargetRefused):
        http.prepare(f"https://{host}:{port}/hook")
    assert _connections(counting_server) == 0


@pytest.fixture
def tls(tmp_path, settings):
    ca, cert, key = make_tls_files(tmp_path)
    settings.IDP_WEBHOOK_CA_BUNDLE = ca
    return cert, key


def test_connects_to_the_checked_address_with_sni_and_host_of_the_name(monkeypatch, settings, tls):
    server = Receiver("127.0.0.2", tls=tls)
    try:
        settings.IDP_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.2/32"]
        monkeypatch.setattr(http, "resolve", lambda host, port: ["127.0.0.2"])
        target = http.prepare(f"https://hooks.test:{server.port}/in")
        # A second DNS answer (rebinding) must not matter: the request goes to the checked address.
        monkeypatch.setattr(http, "resolve", lambda host, port: ["127.0.0.1"])
        looked_up = []
        real = socket.getaddrinfo
        monkeypatch.setattr(socket, "getaddrinfo", lambda h, *a, **k: looked_up.append(h) or real(h, *a, **k))
        resp = http.post(target, b"{}", {"webhook-id": "msg_1"})
        assert resp.status == 200
        assert server.sni == ["hooks.test"]
        assert server.requests[0]["headers"]["Host"] == f"hooks.test:{server.port}"
        assert "hooks.test" not in looked_up
    finally:
        server.close()


def test_certificate_is_checked_against_the_name(monkeypatch, settings, tls):
    server = Receiver("127.0.0.2", tls=tls)
    try:
        settings.IDP_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.2/32"]
        monkeypatch.setattr(http, "resolve", lambda host, port: ["127.0.0.2"])
        target = http.prepare(f"https://other-name.test:{server.port}/in")
        with pytest.raises(http.HTTPError):
            http.post(target, b"{}", {})
        assert server.requests == []
    finally:
        server.close()


@pytest.mark.parametrize("location", ["https://127.0.0.1:{port}/x", "http://169.254.169.254/latest/meta-data/",
                                      "https://[::1]:{port}/", "https://10.0.0.1/"])
def test_redirects_are_not_followed(settings, tls, location):
    target_server = Receiver("127.0.0.1")
    redirector = Receiver("127.0.0.2", tls=tls, default=(302, {"Location": ""}, b""))
    try:
        redirector.default = (302, {"Location": location.format(port=target_server.port)}, b"")
        settings.IDP_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.2/32"]
        resp = http.post(http.prepare(redirector.url(host="127.0.0.2")), b"{}", {})
        assert resp.status == 302
        assert len(redirector.requests) == 1 and target_server.requests == []
    finally:
        target_server.close()
        redirector.close()


def test_response_body_is_truncated(settings, tls):
    server = Receiver("127.0.0.2", tls=tls, default=(500, {}, b"x" * 100_000))
    try:
        settings.IDP_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.2/32"]
        resp = http.post(http.prepare(server.url(host="127.0.0.2")), b"{}", {}, body_limit=1024)
        assert resp.status == 500 and resp.body == b"x" * 1024
    finally:
        server.close()


def test_dev_mode_allows_http_and_loopback_with_a_warning(settings, caplog):
    settings.IDP_DEV_MODE = True
    server = Receiver("127.0.0.1")
    try:
        target = http.prepare(server.url())
        assert http.post(target, b"{}", {}).status == 200
        assert any("allowed by configuration" in r.getMessage() for r in caplog.records)
    finally:
        server.close()


def test_allowlist_does_not_open_other_private_ranges(settings, monkeypatch):
    settings.IDP_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    monkeypatch.setattr(http, "resolve", lambda host, port: ["10.0.0.1"])
    with pytest.raises(TargetRefused):
        http.prepare("https://hooks.test/")
    with pytest.raises(TargetRefused):
        http.prepare("https://127.0.0.1/")
