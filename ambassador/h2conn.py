"""HTTP/2 towards an upstream: one multiplexed connection per instance (RFC 9113), h2 over TLS
(ALPN ``h2``) or cleartext with prior knowledge. The frame layer is the ``h2`` library; this module
maps its events onto the same Exchange interface the HTTP/1.1 connection offers the proxy."""
from __future__ import annotations

import asyncio

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

from .exchange import RESPONSE_DROP, ClientGone, Exchange, UpstreamReset

STREAM_WINDOW = 1 << 20  # what one stream may receive before the proxy has passed it on
CONNECTION_WINDOW = 16 << 20  # so one slow client's stream cannot stall the others
MAX_STREAM_ID = (1 << 31) - 1

_ResponseReceived = h2.events.ResponseReceived
_DataReceived = h2.events.DataReceived
_StreamEnded = h2.events.StreamEnded
_StreamReset = h2.events.StreamReset
_WindowUpdated = h2.events.WindowUpdated
_RemoteSettingsChanged = h2.events.RemoteSettingsChanged
_ConnectionTerminated = h2.events.ConnectionTerminated


class H2Exchange(Exchange):
    """One stream. Unlike HTTP/1.1, giving up resets the stream and leaves the connection to the others."""

    __slots__ = ("sid", "paused", "unacked")

    def __init__(self, conn, reused: bool, sid: int):
        super().__init__(conn, reused)
        self.sid = sid
        self.paused = False
        self.unacked = 0

    def release(self) -> None:
        if not self.done:
            self.conn.reset(self, h2.errors.ErrorCodes.CANCEL)
        self._let_go()

    def abort(self) -> None:
        if not self.done:
            self.fail(UpstreamReset("abandoned by the proxy"))
            self.conn.reset(self, h2.errors.ErrorCodes.CANCEL)
        self._let_go()

    def _let_go(self) -> None:
        # Bytes held back while paused count against the connection's window too: acknowledge
        # them now (h2 updates only the connection's window for a closed stream), or the window
        # shrinks for good.
        if self.unacked:
            n, self.unacked = self.unacked, 0
            self.conn.acknowledge(self.sid, n)
        self.conn.forget(self)

    def pause(self) -> None:
        # Backpressure per stream: received bytes are acknowledged (WINDOW_UPDATE) only once the
        # client has taken them, so the upstream stops at the stream window.
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        if self.unacked:
            n, self.unacked = self.unacked, 0
            self.conn.acknowledge(self.sid, n)


class H2Conn(asyncio.Protocol):
    def __init__(self, upstream, inst, generation: int):
        self.upstream = upstream
        self.inst = inst
        self.generation = generation
        self.loop = upstream.loop
        self.transport = None
        cfg = h2.config.H2Configuration(client_side=True, header_encoding=None)
        self.h2 = h2.connection.H2Connection(cfg)
        self.h2.local_settings = h2.settings.Settings(client=True, initial_values={
            h2.settings.SettingCodes.ENABLE_PUSH: 0,
            h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: STREAM_WINDOW,
            h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 100,
        })
        self.streams: dict[int, H2Exchange] = {}
        self.closed = False
        self.goaway = False  # no new streams: the server said GOAWAY, or TLS material was replaced
        self.used = 0
        self.idle_since = 0.0
        self.write_paused = False
        self.waiters: list[asyncio.Future] = []  # request bodies waiting for window or a drained socket

    # asyncio.Protocol
    def connection_made(self, transport) -> None:
        self.transport = transport

    def negotiated(self) -> bool:
        """Over TLS the server must have chosen ``h2`` by ALPN; cleartext is prior knowledge."""
        ssl_object = self.transport.get_extra_info("ssl_object")
        return ssl_object is None or ssl_object.selected_alpn_protocol() == "h2"

    def start(self) -> None:
        """The connection preface and our settings; sent only once the protocol is agreed, so an
        HTTP/1.1-only server never sees them."""
        self.h2.initiate_connection()
        self.h2.increment_flow_control_window(CONNECTION_WINDOW - 65535)
        self.transport.write(self.h2.data_to_send())

    def connection_lost(self, exc) -> None:
        self.closed = True
        try:
            self.inst.h2.remove(self)
        except ValueError:
            pass
        self._wake()
        streams, self.streams = self.streams, {}
        for ex in streams.values():
            ex.fail(UpstreamReset(str(exc) if exc else "connection closed by upstream"))

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        self._wake()

    def eof_received(self):
        return False

    def data_received(self, data: bytes) -> None:
        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError as e:
            self._flush()
            self._broken(f"HTTP/2 protocol error: {e}")
            return
        streams = self.streams
        for ev in events:
            t = type(ev)
            if t is _DataReceived:
                ex = streams.get(ev.stream_id)
                if ex is None:
                    self.h2.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                    continue
                ex.data(ev.data)
                if ex.paused:
                    ex.unacked += ev.flow_controlled_length
                else:
                    self.h2.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif t is _ResponseReceived:
                ex = streams.get(ev.stream_id)
                if ex is None:
                    continue
                ex.received = True
                fields = []
                for n, v in ev.headers:
                    if n[0] == 58:  # b":"
                        if n == b":status":
                            ex.status = int(v)
                    elif n in RESPONSE_DROP:
                        if n == b"content-length":
                            ex.length = v
                    else:
                        fields += (n, b": ", v, b"\r\n")
                ex.fields = fields
                ex.head_done()
            elif t is _StreamEnded:
                ex = streams.pop(ev.stream_id, None)
                if ex is not None:
                    ex.body_sent = True
                    ex.complete()
            elif t is _StreamReset:
                ex = streams.pop(ev.stream_id, None)
                if ex is not None:
                    if ev.error_code == h2.errors.ErrorCodes.REFUSED_STREAM:
                        ex.received = False  # RFC 9113 8.7: refused before any processing, safe to retry
                    ex.fail(UpstreamReset(f"stream reset by upstream ({_code(ev.error_code)})"))
            elif t is _WindowUpdated or t is _RemoteSettingsChanged:
                self._wake()
            elif t is _ConnectionTerminated:
                self.goaway = True
                last = ev.last_stream_id if ev.last_stream_id is not None else 0
                for sid in [s for s in streams if s > last]:
                    ex = streams.pop(sid)
                    ex.received = False  # above last_stream_id: the server did not process it
                    ex.fail(UpstreamReset(f"upstream sent GOAWAY ({_code(ev.error_code)})"))
            # Interim (1xx) answers, trailers, pings and settings acks need nothing from us.
        self._flush()
        if self.goaway and not self.streams:
            self.close()

    # use
    def available(self, generation: int) -> bool:
        if self.closed or self.goaway or self.generation != generation:
            return False
        h = self.h2
        return (len(self.streams) < h.remote_settings.max_concurrent_streams
                and (h.highest_outbound_stream_id or 0) < MAX_STREAM_ID - 2)

    def send(self, headers: list, body, head_only: bool) -> H2Exchange:
        h = self.h2
        sid = h.get_next_available_stream_id()
        ex = H2Exchange(self, self.used > 0, sid)
        self.used += 1
        self.streams[sid] = ex
        try:
            h.send_headers(sid, headers, end_stream=body is None)
            if body is None:
                ex.body_sent = True
            elif body.complete_in_memory():
                rest = self._send_some(sid, body.data())
                if rest:
                    ex.pump = self.loop.create_task(self._pump_bytes(ex, rest))
                else:
                    h.end_stream(sid)
                    ex.body_sent = True
            else:
                ex.pump = self.loop.create_task(self._pump(ex, body))
        except (h2.exceptions.H2Error, ValueError) as e:
            self.streams.pop(sid, None)
            ex.fail(UpstreamReset(f"request cannot be sent over HTTP/2: {e}"))
        self._flush()
        return ex

    def _send_some(self, sid: int, data: bytes) -> bytes:
        h = self.h2
        while data:
            n = min(len(data), h.local_flow_control_window(sid), h.max_outbound_frame_size)
            if n <= 0:
                break
            h.send_data(sid, data[:n])
            data = data[n:]
        return data

    async def _send_all(self, ex: H2Exchange, data: bytes) -> None:
        while True:
            data = self._send_some(ex.sid, data)
            self._flush()
            if not data and not self.write_paused:
                return
            if self.closed or ex.done or ex.error is not None:
                raise UpstreamReset("stream closed while sending the request body")
            fut = self.loop.create_future()
            self.waiters.append(fut)
            await fut

    async def _pump_bytes(self, ex: H2Exchange, data: bytes) -> None:
        try:
            await self._send_all(ex, data)
            self._end(ex)
        except (UpstreamReset, h2.exceptions.H2Error):
            pass

    async def _pump(self, ex: H2Exchange, body) -> None:
        try:
            async for chunk in body.stream():
                await self._send_all(ex, chunk)
            self._end(ex)
        except (UpstreamReset, h2.exceptions.H2Error):
            pass
        except ClientGone:
            self.reset(ex, h2.errors.ErrorCodes.CANCEL)
            ex.fail(UpstreamReset("client went away during the request body"))
            self.forget(ex)

    def _end(self, ex: H2Exchange) -> None:
        if not self.closed and ex.sid in self.h2.streams and self.h2.streams[ex.sid].open:
            self.h2.end_stream(ex.sid)
            self._flush()
        ex.body_sent = True

    def acknowledge(self, sid: int, n: int) -> None:
        if not self.closed:
            self.h2.acknowledge_received_data(n, sid)
            self._flush()

    def reset(self, ex: H2Exchange, code) -> None:
        if ex.pump is not None and not ex.pump.done():
            ex.pump.cancel()
        if self.closed:
            return
        try:
            self.h2.reset_stream(ex.sid, code)
        except h2.exceptions.H2Error:
            pass  # already closed on the wire
        self._flush()

    def forget(self, ex: H2Exchange) -> None:
        self.streams.pop(ex.sid, None)
        if not self.streams:
            self.idle_since = self.loop.time()
            if self.goaway and not self.closed:
                self.close()

    def retire(self) -> None:
        """No new streams; close once those in flight are done."""
        self.goaway = True
        if not self.streams:
            self.close()

    def _flush(self) -> None:
        data = self.h2.data_to_send()
        if data and not self.closed:
            self.transport.write(data)

    def _wake(self) -> None:
        waiters, self.waiters = self.waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

    def _broken(self, why: str) -> None:
        streams, self.streams = self.streams, {}
        for ex in streams.values():
            ex.fail(UpstreamReset(why))
        self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.transport is not None:
                self.transport.abort()
        for ex in list(self.streams.values()):
            if ex.pump is not None and not ex.pump.done():
                ex.pump.cancel()


def _code(code) -> str:
    try:
        return h2.errors.ErrorCodes(code).name
    except ValueError:
        return str(code)
