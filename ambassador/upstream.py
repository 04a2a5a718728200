"""Upstream runtime: instances, balancer, breaker, TLS, token, HTTP/1.1 keep-alive pools and
multiplexed HTTP/2 connections."""
from __future__ import annotations

import asyncio
import json
import logging
import ssl

import httptools

from . import discovery
from .balancer import Balancer, Instance
from .breaker import Breaker
from .corked import CorkedTransport, cork_for
from .exchange import RESPONSE_DROP, ClientGone, ConnectFailure, Exchange, UpstreamReset
from .h2conn import H2Conn
from .tls import ReloadingContext
from .tokens import TokenSource

log = logging.getLogger("ambassador.upstream")

# Connection values that name no other field (keep-alive/close are dropped anyway): not worth keeping.
PLAIN_CONNECTION = frozenset({b"keep-alive", b"Keep-Alive", b"close", b"Close"})

# Header fields travel as flat lists of pieces, ``[name, b": ", value, b"\r\n", ...]``: appending four
# pieces and joining once costs less than building a line per field.
FORWARD, CONTENT_LENGTH, CONNECTION, HOP = 0, 1, 2, 3
_RESPONSE_FIELDS: dict = {}  # a field name as received -> what to do with it
_response_field = _RESPONSE_FIELDS.get


def response_field(name: bytes) -> int:
    nl = name.lower()
    action = FORWARD if nl not in RESPONSE_DROP else CONTENT_LENGTH if nl == b"content-length" \
        else CONNECTION if nl == b"connection" else HOP
    if len(_RESPONSE_FIELDS) < 1024:  # names come from upstreams: keep the cache bounded
        _RESPONSE_FIELDS[name] = action
    return action


class H1Conn(asyncio.Protocol):
    """An HTTP/1.1 client connection to one instance, one exchange at a time."""

    def __init__(self, upstream, inst: Instance, generation: int):
        self.upstream = upstream
        self.inst = inst
        self.generation = generation
        self.loop = upstream.loop
        self.transport = None
        self.parser = httptools.HttpResponseParser(self)
        self.ex: Exchange | None = None
        self.closed = False
        self.reused = False
        self.head_only = False  # the current request is HEAD: the response has no body whatever it says
        self.skip_interim = False
        self.write_paused = False
        self.read_paused = False
        self.drain: asyncio.Future | None = None
        self.idle_since = 0.0

    # asyncio.Protocol
    def connection_made(self, transport) -> None:
        self.transport = CorkedTransport(transport, cork_for(self.loop))

    def connection_lost(self, exc) -> None:
        self.closed = True
        try:
            self.inst.idle.remove(self)
        except ValueError:
            pass
        if self.drain is not None and not self.drain.done():
            self.drain.set_exception(UpstreamReset("connection lost"))
        ex = self.ex
        if ex is not None and not ex.done:
            ex.fail(UpstreamReset(str(exc) if exc else "connection closed by upstream"))

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        if self.drain is not None and not self.drain.done():
            self.drain.set_result(None)
        self.drain = None

    def data_received(self, data: bytes) -> None:
        ex = self.ex
        if ex is None:
            self.transport.abort()  # bytes nobody asked for: the connection cannot be trusted
            return
        ex.received = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as e:
            ex.fail(UpstreamReset(f"malformed response: {e}"))
            self.close()
            return
        # Told once the whole packet is parsed, so an answer that came with its head is complete.
        if ex.ready:
            owner = ex.owner
            if owner is not None:
                ex.owner = None
                owner.cc.server.head_arrived(owner)

    def eof_received(self):
        return False

    # httptools callbacks
    def on_status(self, reason: bytes) -> None:
        self.ex.reason = reason

    def on_header(self, name: bytes, value: bytes) -> None:
        action = _response_field(name)
        if action is None:
            action = response_field(name)
        if action == FORWARD:
            self.ex.fields += (name, b": ", value, b"\r\n")
        elif action == CONTENT_LENGTH:
            self.ex.length = value
        elif action == CONNECTION and value not in PLAIN_CONNECTION:
            self.ex.conn_value = value

    def on_headers_complete(self) -> None:
        ex = self.ex
        status = self.parser.get_status_code()
        if status < 200:
            # 1xx interim answers are not forwarded (the proxy answers Expect: 100-continue itself).
            ex.fields = []
            ex.length = ex.conn_value = None
            self.skip_interim = True
            return
        ex.status = status
        ex.keep_alive = self.parser.should_keep_alive()
        ex.ready = True  # Exchange.head_done(), inlined: this runs for every call
        head = ex.head
        if head is not None and not head.done():
            head.set_result(None)
        if self.head_only:
            # llhttp would wait for a body that a HEAD answer never carries; finish here and use a
            # fresh parser for the next exchange.
            self.parser = httptools.HttpResponseParser(self)
            self.head_only = False
            ex.complete()

    def on_body(self, body: bytes) -> None:
        ex = self.ex
        if ex.sink is not None:
            ex.sink.data(body)
        else:
            ex.pending.append(body)

    def on_message_complete(self) -> None:
        if self.skip_interim:
            self.skip_interim = False
            return
        ex = self.ex
        if ex is not None and not ex.done:
            ex.done = True
            if ex.sink is not None:
                ex.sink.end()

    # use
    def send(self, head: bytes, body, chunked: bool, head_only: bool) -> Exchange:
        ex = self.ex = Exchange(self, self.reused)
        self.head_only = head_only
        if body is None:
            self.transport.write(head)
            ex.body_sent = True
        elif body.complete_in_memory():
            self.transport.write(head + body.framed(chunked))
            ex.body_sent = True
        else:
            self.transport.write(head)
            ex.pump = self.loop.create_task(self._pump(ex, body, chunked))
        return ex

    async def _pump(self, ex: Exchange, body, chunked: bool) -> None:
        write = self.transport.write
        try:
            async for chunk in body.stream():
                if self.closed:
                    return
                if chunked:
                    write(b"%x\r\n%b\r\n" % (len(chunk), chunk))
                else:
                    write(chunk)
                if self.write_paused:
                    self.drain = self.loop.create_future()
                    await self.drain
            if chunked and not self.closed:
                write(b"0\r\n\r\n")
            ex.body_sent = True
        except (UpstreamReset, ConnectionError, ClientGone):
            self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.transport is not None:
                self.transport.abort()
        ex = self.ex
        if ex is not None and ex.pump is not None and not ex.pump.done():
            ex.pump.cancel()

    def pause_reading(self) -> None:
        if not self.closed:
            self.read_paused = True
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if not self.closed:
            self.read_paused = False
            self.transport.resume_reading()


class Upstream:
    def __init__(self, cfg, metrics, loop):
        self.cfg = cfg
        self.name = cfg.name
        self.name_json = json.dumps(cfg.name, ensure_ascii=False)  # for the access log
        self.loop = loop
        self.metrics = metrics
        self.balancer = Balancer(cfg.balance, cfg.outlier,
                                 on_eject=lambda inst: metrics.ejections.labels(cfg.name).inc())
        gauge = metrics.breaker_state.labels(cfg.name)
        gauge.set(0)
        self.breaker = Breaker(cfg.breaker, on_change=gauge.set)
        self.http2 = cfg.protocol == "http2"
        self.scheme = b"https" if cfg.tls is not None else b"http"
        self.tls = None
        if cfg.tls is not None:
            self.tls = ReloadingContext(cfg.tls, alpn=["h2"] if self.http2 else ["http/1.1"],
                                        on_reload=self._tls_reloaded)
        self.token = None
        if cfg.token is not None:
            refreshes = metrics.token_refreshes
            self.token = TokenSource(cfg.token, on_fetch=lambda outcome: refreshes.labels(cfg.name, outcome).inc())
        self.closed = False
        self.tasks: list[asyncio.Task] = []
        self.connect_timeout = cfg.pool.connect_timeout
        self.max_idle = cfg.pool.max_idle
        self.idle_timeout = cfg.pool.idle_timeout
        if cfg.dns is None:
            self.balancer.set_instances([self._instance(h, p) for h, p in cfg.instances])
            metrics.instances.labels(cfg.name).set(len(cfg.instances))

    def _instance(self, host: str, port: int) -> Instance:
        inst = Instance(host, port)
        if self.cfg.host:
            inst.set_authority(self.cfg.host)
        elif self.cfg.dns is not None:
            d = self.cfg.dns
            inst.set_authority(d.name if d.port in (80, 443) else f"{d.name}:{d.port}")
        elif port in (80, 443):
            inst.set_authority(host)
        return inst

    def server_name(self, inst: Instance) -> str:
        if self.cfg.tls is not None and self.cfg.tls.server_name:
            return self.cfg.tls.server_name
        return self.cfg.dns.name if self.cfg.dns is not None else inst.host

    async def start(self) -> None:
        if self.cfg.dns is not None:
            first = self.loop.create_future()
            self.tasks.append(self.loop.create_task(discovery.watch(self.cfg.dns, self._apply_dns, first)))
            try:
                async with asyncio.timeout(5):
                    await first
            except TimeoutError:
                log.warning("upstream %s: first DNS lookup still pending", self.name)
        self.tasks.append(self.loop.create_task(self._reap_idle()))

    def _apply_dns(self, addrs: list[str]) -> None:
        port = self.cfg.dns.port
        current = {i.host: i for i in self.balancer.instances}
        new = [current.pop(a, None) or self._instance(a, port) for a in addrs]
        for gone in current.values():
            gone.removed = True
            self._close_instance(gone)
        self.balancer.set_instances(new)
        self.metrics.instances.labels(self.name).set(len(new))
        log.info("upstream %s: instances %s", self.name, ", ".join(i.key for i in new) or "(none)")

    def _close_instance(self, inst: Instance) -> None:
        for conn in list(inst.idle):
            conn.close()
        inst.idle.clear()
        for conn in list(inst.h2):
            conn.retire()  # streams in flight finish; nothing new starts on it

    def _tls_reloaded(self) -> None:
        self.metrics.tls_reloads.labels(self.name).inc()
        for inst in self.balancer.instances:
            self._close_instance(inst)

    async def _reap_idle(self) -> None:
        while True:
            await asyncio.sleep(min(5.0, self.idle_timeout / 2))
            limit = self.loop.time() - self.idle_timeout
            for inst in self.balancer.instances:
                for conn in [c for c in inst.idle if c.idle_since < limit]:
                    conn.close()
                for conn in [c for c in inst.h2 if not c.streams and c.idle_since < limit]:
                    conn.close()
            if self.tls is not None:
                self.tls.context()  # notice rotated files even when no new connection is needed

    def pooled(self, inst: Instance):
        """A ready connection without waiting: an idle HTTP/1.1 one, or an HTTP/2 one with room."""
        generation = self.tls.generation if self.tls is not None else 0
        if self.http2:
            for conn in inst.h2:
                if conn.available(generation):
                    return conn
            return None
        idle = inst.idle
        while idle:
            conn = idle.pop()
            if not conn.closed and conn.generation == generation and not conn.transport.is_closing():
                conn.reused = True
                return conn
            conn.close()
        return None

    async def acquire(self, inst: Instance):
        conn = self.pooled(inst)
        if conn is not None:
            return conn
        if not self.http2:
            return await self.connect(inst, lambda gen: H1Conn(self, inst, gen))
        # Calls arriving together share one new connection rather than each opening their own.
        while True:
            pending = inst.h2_connecting
            if pending is None:
                break
            failure = await asyncio.shield(pending)
            if failure is not None:
                raise ConnectFailure(str(failure))  # the connection we waited for could not be made
            conn = self.pooled(inst)
            if conn is not None:
                return conn
        fut = inst.h2_connecting = self.loop.create_future()
        failure = None
        try:
            conn = await self.connect(inst, lambda gen: H2Conn(self, inst, gen))
            if not conn.negotiated():
                conn.close()
                raise ConnectFailure(f"{inst.key} did not agree to HTTP/2 (ALPN h2)")
            conn.start()
            inst.h2.append(conn)
            return conn
        except ConnectFailure as e:
            failure = e
            raise
        finally:
            inst.h2_connecting = None
            fut.set_result(failure)

    async def connect(self, inst: Instance, factory):
        ctx = server_hostname = None
        generation = 0
        if self.tls is not None:
            ctx = self.tls.context()
            generation = self.tls.generation
            server_hostname = self.server_name(inst)
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, conn = await self.loop.create_connection(lambda: factory(generation), inst.host, inst.port,
                                                            ssl=ctx, server_hostname=server_hostname)
        except TimeoutError:
            raise ConnectFailure(f"connect to {inst.key} timed out after {self.connect_timeout:g}s") from None
        except ssl.SSLError as e:
            raise ConnectFailure(f"TLS with {inst.key} failed: {e.reason or e}") from None
        except OSError as e:
            raise ConnectFailure(f"connect to {inst.key} failed: {e.strerror or e}") from None
        return conn

    def close(self) -> None:
        self.closed = True
        for t in self.tasks:
            t.cancel()
        for inst in self.balancer.instances:
            self._close_instance(inst)
            for conn in list(inst.h2):
                conn.close()
