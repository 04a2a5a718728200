"""Real servers for the ambassador tests, all on loopback: an event-loop thread, HTTP(S) upstreams
whose behaviour each test scripts, certificates made at test time, and the proxy itself."""
from __future__ import annotations

import asyncio
import datetime
import gc
import hashlib
import ipaddress
import json
import socket
import ssl
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


class LoopThread:
    """An event loop on its own thread; tests call into it with run()."""

    def __init__(self):
        import uvloop  # the proxy runs on uvloop in production; test it there

        self.loop = uvloop.new_event_loop()
        # What the loop could only log (a task's unread exception, a callback's error) is a fault
        # of the servers here; stop() fails on it rather than let a finaliser log it mid-way
        # through a later test.
        self.unhandled: list[str] = []
        self.loop.set_exception_handler(self._unhandled)
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def _unhandled(self, loop, context):
        self.unhandled.append(f"{context.get('message')}: {context.get('exception')!r}")
        loop.default_exception_handler(context)

    def run(self, coro, timeout: float = 30):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn, *args):
        async def _call():
            return fn(*args)
        return self.run(_call())

    def stop(self):
        async def _finish():
            # Whatever a test left running ends here, so the loop closes without pending tasks.
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.loop.shutdown_asyncgens()
        self.run(_finish(), timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()
        gc.collect()  # finalises finished tasks now, so an unread exception is reported here
        assert not self.unhandled, self.unhandled


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


# ----------------------------------------------------------------------------------- certificates
class CA:
    def __init__(self, directory: Path, name: str = "Test CA"):
        self.dir = directory
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - datetime.timedelta(hours=1))
                     .not_valid_after(now + datetime.timedelta(days=2))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .sign(self.key, hashes.SHA256()))
        self.path = directory / f"{name.replace(' ', '_')}.pem"
        self.path.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, name: str, dns: list[str] = (), ips: list[str] = (), client: bool = False) -> tuple[Path, Path]:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        sans = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        b = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
             .issuer_name(self.cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
             .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH if client
                                                   else ExtendedKeyUsageOID.SERVER_AUTH]), critical=False))
        if sans:
            b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = b.sign(self.key, hashes.SHA256())
        cp, kp = self.dir / f"{name}.pem", self.dir / f"{name}.key"
        cp.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        kp.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption()))
        return cp, kp


def server_context(cert: Path, key: Path, client_ca: Path | None = None, alpn=None) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    if client_ca is not None:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(client_ca)
    if alpn:
        ctx.set_alpn_protocols(alpn)
    return ctx


# ------------------------------------------------------------------------------------ upstreams
class Req:
    def __init__(self, method, target, headers, body, peer_cert):
        self.method = method
        self.target = target
        u = urlsplit(target)
        self.path = u.path
        self.query = {k: v[0] for k, v in parse_qs(u.query).items()}
        self.headers = headers  # list of (name, value) as received
        self.h = {k.lower(): v for k, v in headers}
        self.body = body
        self.peer_cert = peer_cert


class Resp:
    def __init__(self, status=200, body=b"", headers=None, chunks=None, delay=0.0, close=False, raw=None):
        self.status, self.body, self.headers = status, body, headers or {}
        self.chunks, self.delay, self.close, self.raw = chunks, delay, close, raw


class Upstream:
    """An HTTP/1.1 server. ``handler(req) -> Resp`` (may be async); the default echoes the request.
    ``kill()`` drops the listener and every connection; ``restart()`` brings it back on the same port."""

    def __init__(self, lt: LoopThread, name: str, ssl_ctx=None, handler=None, host="127.0.0.1", port=0):
        self.lt, self.name, self.ssl, self.handler, self.host = lt, name, ssl_ctx, handler, host
        self.port = port or free_port(host)
        self.log: list[Req] = []
        self.connections = 0
        self.writers: set = set()
        self.tasks: set = set()
        self.server = None
        self.start()

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self):
        async def _start():
            self.server = await asyncio.start_server(self._conn, self.host, self.port, ssl=self.ssl,
                                                     reuse_address=True)
        self.lt.run(_start())

    def kill(self):
        async def _kill():
            self.server.close()
            for w in list(self.writers):
                w.transport.abort()
            self.writers.clear()
            # Connection handlers see the abort on their next read; wait for them to end.
            if self.tasks:
                _, pending = await asyncio.wait(list(self.tasks), timeout=2)
                for t in pending:
                    t.cancel()
                if pending:
                    await asyncio.wait(pending)
        self.lt.run(_kill())

    restart = start

    def count(self, method=None, path=None) -> int:
        return sum(1 for r in list(self.log) if (method is None or r.method == method)
                   and (path is None or r.path == path))

    async def _conn(self, reader, writer):
        self.connections += 1
        self.writers.add(writer)
        task = asyncio.current_task()
        self.tasks.add(task)
        peer = writer.get_extra_info("peercert")
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                method, target, _ = line.decode().split(" ", 2)
                headers = []
                while True:
                    h = await reader.readline()
                    if h in (b"\r\n", b""):
                        break
                    k, _, v = h.decode().partition(":")
                    headers.append((k.strip(), v.strip()))
                hl = {k.lower(): v for k, v in headers}
                if "chunked" in hl.get("transfer-encoding", ""):
                    body = bytearray()
                    while True:
                        size = int((await reader.readline()).strip().split(b";")[0], 16)
                        if size == 0:
                            await reader.readline()
                            break
                        body += await reader.readexactly(size)
                        await reader.readline()
                    body = bytes(body)
                else:
                    body = await reader.readexactly(int(hl.get("content-length", 0)))
                req = Req(method, target, headers, body, peer)
                self.log.append(req)
                resp = self.handler(req) if self.handler else self.echo(req)
                if asyncio.iscoroutine(resp):
                    resp = await resp
                if resp.delay:
                    await asyncio.sleep(resp.delay)
                if resp.raw is not None:
                    writer.write(resp.raw)
                    await writer.drain()
                    if resp.close:
                        writer.close()
                        return
                    continue
                head = [f"HTTP/1.1 {resp.status} X"]
                for k, v in resp.headers.items():
                    head.append(f"{k}: {v}")
                if resp.chunks is not None:
                    head.append("Transfer-Encoding: chunked")
                elif method != "HEAD" or "content-length" not in {k.lower() for k in resp.headers}:
                    head.append(f"Content-Length: {len(resp.body)}")
                if resp.close:
                    head.append("Connection: close")
                writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
                if resp.chunks is not None:
                    for c in resp.chunks:
                        writer.write(b"%x\r\n%b\r\n" % (len(c), c))
                        await writer.drain()
                    writer.write(b"0\r\n\r\n")
                elif method != "HEAD":
                    writer.write(resp.body)
                await writer.drain()
                if resp.close:
                    writer.close()
                    return
        # uvloop raises RuntimeError on a write to a transport the client or kill() closed; a
        # handler must end quietly then, or its task's unread exception is logged from a finaliser
        # at whatever moment the garbage collector runs (under Python 3.11, inside a later
        # test's ast.parse, which then fails).
        except (ConnectionError, asyncio.IncompleteReadError, ValueError, ssl.SSLError, RuntimeError):
            return
        finally:
            self.writers.discard(writer)
            self.tasks.discard(task)

    def echo(self, req: Req) -> Resp:
        if req.path.startswith("/status/"):
            return Resp(int(req.path.split("/")[2]), json.dumps({"instance": self.name}).encode(),
                        {"Content-Type": "application/json"})
        doc = {"instance": self.name, "method": req.method, "target": req.target, "headers": req.headers,
               "body_len": len(req.body), "body_sha256": hashlib.sha256(req.body).hexdigest(),
               "peer_cn": _peer_cn(req.peer_cert)}
        return Resp(200, json.dumps(doc).encode(), {"Content-Type": "application/json"})


def _peer_cn(cert):
    if not cert:
        return None
    for rdn in cert.get("subject", ()):
        for k, v in rdn:
            if k == "commonName":
                return v
    return None


# ---------------------------------------------------------------------------------------- proxy
class Proxy:
    """The ambassador App running in the loop thread, from a config dict written to a file."""

    def __init__(self, lt: LoopThread, directory: Path, cfg: dict, exporter=None):
        from ambassador import configfile
        from ambassador.server import App

        self.lt = lt
        self.path = directory / "ambassador.yaml"
        cfg = dict(cfg)
        cfg.setdefault("listener", {"address": "127.0.0.1", "port": 0})
        tel = cfg.setdefault("telemetry", {})
        tel.setdefault("access_log", str(directory / "access.log"))
        self.log_path = Path(tel["access_log"]) if tel["access_log"] else None
        self.path.write_text(yaml.safe_dump(cfg))
        self.cfg = configfile.load(self.path)

        async def _start():
            app = App(self.cfg)
            if exporter is not None:
                from opentelemetry.sdk.trace.export import SimpleSpanProcessor
                app.tracing.add_processor(SimpleSpanProcessor(exporter))
            await app.start()
            return app
        self.app = lt.run(_start())
        self.host, self.port = self.app.addresses.get("http", ("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.port}"

    def access_log(self) -> list[dict]:
        self.lt.call(self.app.access_log.flush)
        if not self.log_path or not self.log_path.exists():
            return []
        return [json.loads(x) for x in self.log_path.read_text().splitlines() if x]

    def metrics(self) -> str:
        return self.app.metrics.render().decode()

    def stop(self):
        self.lt.run(self.app.shutdown(), timeout=40)


def metric_value(text: str, name: str, **labels) -> float:
    total = 0.0
    found = False
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        metric, _, value = line.rpartition(" ")
        mname, _, lab = metric.partition("{")
        if mname != name:
            continue
        got = dict(p.split("=", 1) for p in lab.rstrip("}").split(",") if p) if lab else {}
        got = {k: v.strip('"') for k, v in got.items()}
        if all(got.get(k) == str(v) for k, v in labels.items()):
            total += float(value)
            found = True
    if not found:
        raise KeyError(f"{name}{labels} not in metrics")
    return total


def wait_for(predicate, timeout: float = 5.0, interval: float = 0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = predicate()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError("condition not met in time")
