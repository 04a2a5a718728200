"""TCP listener: a client's plain TCP stream carried over TLS or mutual TLS to an upstream instance."""
from __future__ import annotations

import asyncio
import logging

from .exchange import ConnectFailure
from .streams import StreamListener

log = logging.getLogger("ambassador.tcp")


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()  # backpressure: read no faster than the other side takes
        if writer.can_write_eof():
            writer.write_eof()
        else:
            writer.close()  # TLS has no half-close: end the whole stream
    except (ConnectionError, OSError):
        writer.transport.abort()


class TCPListener(StreamListener):
    async def serve(self, reader, writer) -> None:
        up = self.upstream
        if not up.breaker.allow():
            self.metric.labels(self.name, "circuit_open").inc()
            return
        tried = []
        for _ in range(3):  # a refused connection moves on to another instance; nothing was sent yet
            inst = up.balancer.pick(tried)
            if inst is None:
                break
            tried.append(inst)
            try:
                ureader, uwriter = await self.open(up, inst)
            except ConnectFailure as e:
                log.warning("%s: %s", self.name, e)
                up.balancer.failure(inst)
                up.breaker.record(False)
                if not up.breaker.allow():
                    break
                continue
            up.balancer.success(inst)
            up.breaker.record(True)
            self.metric.labels(self.name, "ok").inc()
            try:
                await asyncio.gather(_pipe(reader, uwriter), _pipe(ureader, writer))
            finally:
                uwriter.close()
            return
        up.breaker.release_probe()
        self.metric.labels(self.name, "connect_failure").inc()
