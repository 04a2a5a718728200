"""Plain-TCP-over-TLS listener, Redis/memcached key sharding, DNS discovery."""
from __future__ import annotations

import asyncio
import shutil
import socket
import struct
import subprocess
import time

import pytest
import redis
import requests

from ambassador.balancer import Instance
from ambassador.sharding import Ring

from .helpers import Upstream, free_port, server_context, wait_for


class TLSEcho:
    """A TLS server that answers every line with '<name> <peer CN>: <line>'."""

    def __init__(self, lt, name, ctx):
        self.lt, self.name, self.port = lt, name, free_port()

        async def conn(reader, writer):
            cert = writer.get_extra_info("peercert") or {}
            cn = next((v for rdn in cert.get("subject", ()) for k, v in rdn if k == "commonName"), None)
            try:
                while line := await reader.readline():
                    writer.write(f"{name} {cn}: ".encode() + line)
                    await writer.drain()
            except (ConnectionError, OSError, RuntimeError):  # RuntimeError: uvloop, transport closed
                pass
            writer.close()

        async def start():
            self.server = await asyncio.start_server(conn, "127.0.0.1", self.port, ssl=ctx)
        lt.run(start())

    def kill(self):
        async def stop():
            self.server.close()
        self.lt.run(stop())


def test_tcp_listener_carries_stream_over_mutual_tls(lt, proxy, pki):
    cert, key = pki["server"]
    ctx = server_context(cert, key, client_ca=pki["ca"].path)
    dead, alive = TLSEcho(lt, "dead", ctx), TLSEcho(lt, "alive", ctx)
    dead.kill()
    port = free_port()
    ccert, ckey = pki["client"]
    p = proxy({"listener": None, "tcp_listeners": [{"port": port, "upstream": "db"}],
               "upstreams": {"db": {"instances": [f"127.0.0.1:{dead.port}", f"127.0.0.1:{alive.port}"],
                                    "tls": {"ca": str(pki["ca"].path), "cert": str(ccert), "key": str(ckey),
                                            "server_name": "localhost"}}}})
    for _ in range(3):  # round robin hits the dead instance too: the listener moves on
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            f = s.makefile("rwb")
            for i in range(3):
                f.write(b"hello %d\n" % i)
                f.flush()
                assert f.readline() == b"alive orders-caller: hello %d\n" % i
    assert p.metrics().count('ambassador_stream_connections_total{listener="tcp:%d",outcome="ok"} 3.0' % port) == 1
    alive.kill()


def test_tcp_listener_refuses_untrusted_server(lt, proxy, pki):
    cert, key = pki["wrong"]
    impostor = TLSEcho(lt, "impostor", server_context(cert, key))
    port = free_port()
    proxy({"listener": None, "tcp_listeners": [{"port": port, "upstream": "db"}],
           "upstreams": {"db": {"instances": [f"127.0.0.1:{impostor.port}"],
                                "tls": {"ca": str(pki["ca"].path), "server_name": "localhost"}}}})
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"secret\n")
        try:
            got = s.recv(100)
        except ConnectionResetError:
            got = b""
        assert got == b""  # closed without ever talking to the impostor
    impostor.kill()


# ------------------------------------------------------------------------------------- sharding
@pytest.fixture
def redis_servers(tmp_path):
    assert shutil.which("redis-server"), "redis-server is required (apt-get install redis-server)"
    procs, ports = [], []
    for _ in range(3):
        port = free_port()
        procs.append(subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                       "--appendonly", "no", "--dir", str(tmp_path)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        ports.append(port)
    for port in ports:
        wait_for(lambda port=port: _can_connect(port), timeout=10)
    yield ports
    for pr in procs:
        pr.terminate()
        pr.wait(5)


def _can_connect(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def test_redis_sharding_one_server_view(proxy, redis_servers):
    port = free_port()
    proxy({"listener": None, "shard_listeners": [{"port": port, "protocol": "redis", "upstream": "cache"}],
           "upstreams": {"cache": {"instances": [f"127.0.0.1:{p}" for p in redis_servers]}}})
    r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, protocol=2)
    assert r.ping()
    for i in range(300):
        r.set(f"key:{i}", f"value-{i}")
    assert r.get("key:42") == b"value-42"
    direct = [redis.Redis(host="127.0.0.1", port=p, socket_timeout=5, protocol=2) for p in redis_servers]
    sizes = [d.dbsize() for d in direct]
    assert sum(sizes) == 300 and min(sizes) > 50  # spread over every shard, each key stored once
    assert r.dbsize() == 300
    keys = [f"key:{i}" for i in range(0, 300, 7)] + ["missing"]
    assert r.mget(keys) == [f"value-{i}".encode() for i in range(0, 300, 7)] + [None]
    r.mset({f"m:{i}": str(i) for i in range(20)})
    assert r.mget([f"m:{i}" for i in range(20)]) == [str(i).encode() for i in range(20)]
    with r.pipeline(transaction=False) as pipe:
        for i in range(50):
            pipe.incr(f"counter:{i % 5}")
        results = pipe.execute()
    assert results[-5:] == [10] * 5
    assert r.delete(*[f"m:{i}" for i in range(20)]) == 20
    assert r.exists("key:1", "key:2", "nope") == 2
    with pytest.raises(redis.ResponseError, match="not supported"):
        r.execute_command("MULTI")
    r.flushdb()
    assert r.dbsize() == 0 and all(d.dbsize() == 0 for d in direct)


def test_redis_resp3_client_unmodified(proxy, redis_servers):
    port = free_port()
    proxy({"listener": None, "shard_listeners": [{"port": port, "protocol": "redis", "upstream": "cache"}],
           "upstreams": {"cache": {"instances": [f"127.0.0.1:{p}" for p in redis_servers]}}})
    # redis-py as it comes, asking for RESP3 on connect (HELLO 3).
    r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, protocol=3)
    assert r.ping()
    assert r.connection_pool.get_connection().protocol in (3, "3")
    for i in range(60):
        r.hset(f"h:{i}", mapping={"a": str(i), "b": "x"})  # maps come back as RESP3 '%'
        r.sadd(f"s:{i}", "one", "two")  # sets as '~'
        r.set(f"k:{i}", str(i))
    assert r.hgetall("h:7") == {b"a": b"7", b"b": b"x"}
    assert r.smembers("s:9") == {b"one", b"two"}
    assert r.get("missing") is None  # RESP3 null '_'
    assert r.mget(["k:1", "nope", "k:59"]) == [b"1", None, b"59"]
    assert r.zadd("z", {"m": 1.5}) == 1 and r.zscore("z", "m") == 1.5  # a double ','
    assert r.exists("k:1", "k:2", "nope") == 2 and r.dbsize() == 181
    # Every shard connection was switched: the backends saw HELLO 3 on each.
    direct = [redis.Redis(host="127.0.0.1", port=p, socket_timeout=5, protocol=2) for p in redis_servers]
    clients = [c for d in direct for c in d.client_list() if c.get("cmd") != "client|list"]
    assert clients and all(c["resp"] == "3" for c in clients)
    with pytest.raises(redis.ResponseError, match="NOPROTO"):
        r.execute_command("HELLO", "4")
    r2 = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, protocol=2)  # and RESP2 still works
    assert r2.get("k:3") == b"3" and r2.mget(["k:3", "nope"]) == [b"3", None]
    assert r2.hgetall("h:7") == {b"a": b"7", b"b": b"x"}


def test_ring_moves_few_keys_when_an_instance_goes():
    insts = [Instance("10.0.0.%d" % i, 6379) for i in range(4)]
    full, less = Ring(insts), Ring(insts[:3])
    keys = [f"k{i}".encode() for i in range(4000)]
    moved = sum(1 for k in keys if full.lookup(k) is not insts[3] and full.lookup(k) is not less.lookup(k))
    assert moved == 0  # keys not on the removed instance stay where they were
    share = sum(1 for k in keys if full.lookup(k) is insts[3]) / len(keys)
    assert 0.15 < share < 0.35


def test_memcached_sharding(proxy, tmp_path):
    assert shutil.which("memcached"), "memcached is required (apt-get install memcached)"
    procs, ports = [], []
    for _ in range(2):
        port = free_port()
        procs.append(subprocess.Popen(["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-u", "root"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        ports.append(port)
    try:
        for port in ports:
            wait_for(lambda port=port: _can_connect(port), timeout=10)
        lport = free_port()
        proxy({"listener": None, "shard_listeners": [{"port": lport, "protocol": "memcached", "upstream": "mc"}],
               "upstreams": {"mc": {"instances": [f"127.0.0.1:{p}" for p in ports]}}})
        s = socket.create_connection(("127.0.0.1", lport), timeout=5)
        f = s.makefile("rwb")

        def cmd(line: bytes, data: bytes | None = None) -> bytes:
            f.write(line + b"\r\n" + (data + b"\r\n" if data is not None else b""))
            f.flush()
            return f.readline()
        for i in range(40):
            assert cmd(b"set k%d 5 0 %d" % (i, len(b"v%d" % i)), b"v%d" % i) == b"STORED\r\n"
        f.write(b"get " + b" ".join(b"k%d" % i for i in range(40)) + b" nokey\r\n")
        f.flush()
        got = {}
        while (line := f.readline()) != b"END\r\n":
            _, k, flags, n = line.split()
            got[k] = f.read(int(n) + 2)[:-2]
            assert flags == b"5"
        assert got == {b"k%d" % i: b"v%d" % i for i in range(40)}
        assert cmd(b"incr k-none 1") == b"NOT_FOUND\r\n"
        assert cmd(b"delete k3") == b"DELETED\r\n"
        assert cmd(b"version").startswith(b"VERSION")
        per = []
        for port in ports:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as d:
                d.sendall(b"stats\r\n")
                buf = b""
                while not buf.endswith(b"END\r\n"):
                    buf += d.recv(65536)
                per.append(int(buf.split(b"STAT curr_items ")[1].split(b"\r\n")[0]))
        assert sum(per) == 39 and min(per) > 5
        assert cmd(b"flush_all") == b"OK\r\n"
        s.close()
    finally:
        for pr in procs:
            pr.terminate()
            pr.wait(5)


# ----------------------------------------------------------------------------------------- DNS
class DNSServer:
    """Answers A queries for one name with the current address list and a TTL."""

    def __init__(self, lt, name: str, addrs: list[str], ttl: int = 1):
        self.lt, self.name, self.addrs, self.ttl = lt, name, addrs, ttl
        self.port = free_port()
        self.queries = 0
        outer = self

        class Proto(asyncio.DatagramProtocol):
            def connection_made(self, transport):
                self.t = transport

            def datagram_received(self, data, addr):
                outer.queries += 1
                qid = data[:2]
                end = data.index(b"\0", 12) + 5
                question = data[12:end]
                qtype = struct.unpack(">H", data[end - 4:end - 2])[0]
                answers = outer.addrs if qtype == 1 else []
                out = qid + struct.pack(">HHHHH", 0x8180, 1, len(answers), 0, 0) + question
                for a in answers:
                    out += b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, outer.ttl, 4) + socket.inet_aton(a)
                self.t.sendto(out, addr)

        async def start():
            self.transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
                Proto, local_addr=("127.0.0.1", self.port))
        lt.run(start())

    def close(self):
        self.lt.loop.call_soon_threadsafe(self.transport.close)


def test_dns_discovery_follows_ttl(lt, proxy):
    port = free_port("127.0.0.1")
    one = Upstream(lt, "one", host="127.0.0.1", port=port)
    two = Upstream(lt, "two", host="127.0.0.2", port=port)
    dns = DNSServer(lt, "orders.test", ["127.0.0.1"], ttl=1)
    try:
        p = proxy({"upstreams": {"svc": {"dns": {"name": f"orders.test:{port}", "nameserver": f"127.0.0.1:{dns.port}",
                                                 "min_ttl": "100ms"}}},
                   "routes": [{"upstream": "svc"}]})
        assert requests.get(p.url + "/", timeout=5).json()["instance"] == "one"
        got = requests.get(p.url + "/", timeout=5).json()
        assert dict((k.lower(), v) for k, v in got["headers"])["host"] == f"orders.test:{port}"
        dns.addrs = ["127.0.0.2"]
        t = time.monotonic()
        wait_for(lambda: requests.get(p.url + "/", timeout=5).json()["instance"] == "two", timeout=3)
        assert time.monotonic() - t < 1.6  # re-resolved on the 1 s TTL
        dns.addrs = ["127.0.0.1", "127.0.0.2"]
        wait_for(lambda: {requests.get(p.url + "/", timeout=5).json()["instance"] for _ in range(4)} == {"one", "two"},
                 timeout=3)
        assert metric_gauge(p, port) == 2
    finally:
        dns.close()
        one.kill()
        two.kill()


def metric_gauge(p, port):
    from .helpers import metric_value
    return metric_value(p.metrics(), "ambassador_upstream_instances", upstream="svc")


def test_dns_discovery_with_system_resolver(upstream, proxy):
    u = upstream("local")
    p = proxy({"upstreams": {"svc": {"dns": {"name": f"localhost:{u.port}", "refresh": "200ms"}}},
               "routes": [{"upstream": "svc"}]})
    for _ in range(5):
        assert requests.get(p.url + "/", timeout=5).json()["instance"] == "local"
