#!/usr/bin/env python3
"""The floor for the ambassador benchmark: a minimal keep-alive HTTP/1.1 forwarder on uvloop and
httptools, with none of the ambassador's features (no routing, retries, breaker, budget, metrics,
access log, timeouts, streaming or pipelining). One upstream, pooled keep-alive connections.

Each request is forwarded with its headers (hop-by-hop fields dropped, Host rewritten) once its
message is complete; the answer goes back in one write once the upstream's message is complete.
This is what any Python forwarder on this stack must at least pay per request; the ambassador's
cost above it is the price of its features.

    python bench/ambassador/bare_forwarder.py --port 18084 --upstream 127.0.0.1:18080
"""
from __future__ import annotations

import argparse
import asyncio

import httptools
import uvloop

HOP = frozenset({b"connection", b"keep-alive", b"proxy-connection", b"te", b"transfer-encoding", b"upgrade",
                 b"trailer", b"proxy-authenticate", b"proxy-authorization", b"host", b"content-length"})


class Upstream(asyncio.Protocol):
    """One pooled connection to the upstream, one exchange at a time."""

    def __init__(self, pool):
        self.pool = pool
        self.parser = httptools.HttpResponseParser(self)
        self.client = None
        self.transport = None
        self.reason = b""
        self.head = []
        self.body = []

    def connection_made(self, transport):
        self.transport = transport

    def connection_lost(self, exc):
        if self in self.pool.idle:
            self.pool.idle.remove(self)
        if self.client is not None:
            self.client.transport.close()

    def data_received(self, data):
        self.parser.feed_data(data)

    def on_message_begin(self):
        self.reason = b""
        self.head = []
        self.body = []

    def on_status(self, reason):
        self.reason += reason

    def on_header(self, name, value):
        if name.lower() not in HOP:
            self.head.append(b"%b: %b\r\n" % (name, value))

    def on_body(self, data):
        self.body.append(data)

    def on_message_complete(self):
        client, self.client = self.client, None
        body = b"".join(self.body)
        head = self.head
        head.insert(0, b"HTTP/1.1 %d %b\r\n" % (self.parser.get_status_code(), self.reason))
        head.append(b"Content-Length: %d\r\n\r\n" % len(body))
        head.append(body)
        if not client.transport.is_closing():  # wrk closes its connections at the end of a run
            client.transport.writelines(head)
        if self.parser.should_keep_alive():
            self.pool.idle.append(self)
        else:
            self.transport.close()


class Pool:
    def __init__(self, loop, host, port):
        self.loop = loop
        self.host = host
        self.port = port
        self.authority = f"{host}:{port}".encode()
        self.idle: list[Upstream] = []

    async def connect(self):
        _, conn = await self.loop.create_connection(lambda: Upstream(self), self.host, self.port)
        return conn


class Client(asyncio.Protocol):
    def __init__(self, pool):
        self.pool = pool
        self.parser = httptools.HttpRequestParser(self)
        self.transport = None
        self.url = b""
        self.head = []
        self.body = []

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.transport.close()

    def on_message_begin(self):
        self.url = b""
        self.head = []
        self.body = []

    def on_url(self, url):
        self.url += url

    def on_header(self, name, value):
        if name.lower() not in HOP:
            self.head.append(b"%b: %b\r\n" % (name, value))

    def on_body(self, data):
        self.body.append(data)

    def on_message_complete(self):
        pool = self.pool
        body = b"".join(self.body)
        head = [b"%b %b HTTP/1.1\r\nHost: %b\r\n" % (self.parser.get_method(), self.url, pool.authority),
                *self.head]
        if body:
            head.append(b"Content-Length: %d\r\n" % len(body))
        head.append(b"\r\n")
        head.append(body)
        if pool.idle:
            conn = pool.idle.pop()
            conn.client = self
            conn.transport.writelines(head)
        else:
            pool.loop.create_task(self._send_new(head))

    async def _send_new(self, head):
        try:
            conn = await self.pool.connect()
        except OSError:
            self.transport.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        conn.client = self
        conn.transport.writelines(head)


async def main(port: int, upstream: str) -> None:
    loop = asyncio.get_running_loop()
    host, up_port = upstream.rsplit(":", 1)
    pool = Pool(loop, host, int(up_port))
    server = await loop.create_server(lambda: Client(pool), "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--upstream", required=True, help="host:port")
    args = ap.parse_args()
    uvloop.run(main(args.port, args.upstream))
