"""A real HTTP/2 upstream for the ambassador tests: Hypercorn serving a small ASGI app on loopback,
cleartext (h2c with prior knowledge) or TLS (ALPN h2), in the tests' event-loop thread."""
from __future__ import annotations

import asyncio
import hashlib
import json
from urllib.parse import parse_qs

from hypercorn.asyncio import serve
from hypercorn.config import Config

from .helpers import free_port


class H2Upstream:
    """Records every request it sees (method, path, headers, HTTP version, the client's port, which
    names the connection) and answers by path:

    - ``/status/N``: status N
    - ``/slow?delay=S``: waits S seconds first
    - ``/stream?chunks=N&size=B``: a body of N chunks of B bytes, sent as they are made
    - anything else: the request echoed as JSON (with the body's length and SHA-256)
    """

    def __init__(self, lt, name: str = "h2", cert=None, key=None, client_ca=None):
        self.lt, self.name = lt, name
        self.port = free_port()
        self.log: list[dict] = []
        self.stop_event = None
        cfg = Config()
        cfg.bind = [f"127.0.0.1:{self.port}"]
        cfg.accesslog = None
        cfg.errorlog = None
        cfg.graceful_timeout = 0.5
        if cert is not None:
            cfg.certfile, cfg.keyfile = str(cert), str(key)
            cfg.alpn_protocols = ["h2"]
            if client_ca is not None:
                cfg.ca_certs = str(client_ca)
                cfg.verify_mode = __import__("ssl").CERT_REQUIRED
        self.config = cfg

        async def _start():
            self.stop_event = asyncio.Event()
            self.task = asyncio.get_running_loop().create_task(
                serve(self.app, cfg, shutdown_trigger=self.stop_event.wait, mode="asgi"))
            for _ in range(200):
                try:
                    _, w = await asyncio.open_connection("127.0.0.1", self.port)
                    w.close()
                    return
                except OSError:
                    await asyncio.sleep(0.01)
            raise RuntimeError("hypercorn did not start")
        lt.run(_start())

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def connections(self) -> set:
        return {r["client_port"] for r in self.log}

    def stop(self):
        async def _stop():
            self.stop_event.set()
            try:
                async with asyncio.timeout(5):
                    await self.task
            except TimeoutError:
                self.task.cancel()
        self.lt.run(_stop())

    async def app(self, scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        path = scope["path"]
        query = {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}
        body = bytearray()
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        entry = {"method": scope["method"], "path": path, "http_version": scope["http_version"],
                 "client_port": scope["client"][1],
                 "headers": [[k.decode(), v.decode()] for k, v in scope["headers"]],
                 "body_len": len(body), "body_sha256": hashlib.sha256(body).hexdigest(), "instance": self.name}
        self.log.append(entry)
        if path.startswith("/status/"):
            await self._answer(send, int(path.split("/")[2]), json.dumps(entry).encode())
        elif path == "/slow":
            await asyncio.sleep(float(query.get("delay", "1")))
            await self._answer(send, 200, json.dumps(entry).encode())
        elif path == "/stream":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/octet-stream")]})
            size = int(query.get("size", "65536"))
            for i in range(int(query.get("chunks", "4"))):
                await send({"type": "http.response.body", "body": bytes([65 + i % 26]) * size, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        else:
            await self._answer(send, 200, json.dumps(entry).encode())

    @staticmethod
    async def _answer(send, status: int, data: bytes):
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(data)),
                                (b"x-upstream-protocol", b"h2")]})
        await send({"type": "http.response.body", "body": data})
