"""Shared pieces of the byte-stream listeners (TCP bridge and key sharding)."""
from __future__ import annotations

import asyncio

from .exchange import ConnectFailure


class StreamListener:
    """Accepts client connections on loopback and serves each with ``serve(reader, writer)``."""

    def __init__(self, app, cfg, name: str):
        self.app = app
        self.cfg = cfg
        self.name = name
        self.active: set[asyncio.Task] = set()
        self.writers: set = set()
        self.server = None
        self.metric = app.metrics.stream_connections

    async def start(self):
        self.server = await asyncio.start_server(self._accept, self.cfg.address, self.cfg.port, reuse_address=True)
        return self.server

    @property
    def upstream(self):
        return self.app.runtime.upstreams[self.cfg.upstream]

    async def _accept(self, reader, writer) -> None:
        task = asyncio.current_task()
        self.active.add(task)
        self.writers.add(writer)
        try:
            await self.serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.active.discard(task)
            self.writers.discard(writer)
            writer.close()

    async def open(self, up, inst):
        """A stream to one instance, with the upstream's TLS (server verification, client certificate)."""
        ctx = server_hostname = None
        if up.tls is not None:
            ctx = up.tls.context()
            server_hostname = up.server_name(inst)
        try:
            async with asyncio.timeout(self.cfg.connect_timeout):
                return await asyncio.open_connection(inst.host, inst.port, ssl=ctx, server_hostname=server_hostname)
        except TimeoutError:
            raise ConnectFailure(f"connect to {inst.key} timed out") from None
        except OSError as e:
            raise ConnectFailure(f"connect to {inst.key} failed: {e}") from None

    def drain(self) -> None:
        """Shutdown: idle connections are told nothing new will come; streams in flight carry on."""

    def abort(self) -> None:
        for w in list(self.writers):
            w.transport.abort()
