"""The ambassador process: listeners, signals, reload and graceful shutdown."""
from __future__ import annotations

import asyncio
import gc
import logging
import signal

from . import configfile
from .config import Config
from .proxy import HTTPProxy
from .runtime import Runtime
from .telemetry import AccessLog, Metrics, Tracing, serve_metrics

log = logging.getLogger("ambassador")


class App:
    def __init__(self, cfg: Config, loop: asyncio.AbstractEventLoop | None = None):
        self.config = cfg
        self.loop = loop or asyncio.get_running_loop()
        self.metrics = Metrics()
        self.access_log = AccessLog(cfg.telemetry.access_log)
        self.tracing = Tracing(cfg.telemetry.service_name, cfg.telemetry.otlp_endpoint, cfg.telemetry.tracing)
        self.runtime = Runtime(cfg, self.metrics, self.loop)
        self.http: HTTPProxy | None = None
        self.servers: list[asyncio.AbstractServer] = []
        self.stream_servers: list = []
        self.metrics_server = None
        self.stopped = asyncio.Event()
        self.draining = False
        self.addresses: dict[str, tuple[str, int]] = {}

    async def start(self) -> None:
        await self.runtime.start()
        cfg = self.config
        if cfg.listener is not None:
            self.http = HTTPProxy(self)
            srv = await self.loop.create_server(self.http.protocol, cfg.listener.address, cfg.listener.port,
                                                reuse_address=True, backlog=1024)
            self.servers.append(srv)
            self.addresses["http"] = srv.sockets[0].getsockname()[:2]
        for i, lc in enumerate(cfg.stream_listeners):
            if lc.kind == "tcp":
                from .tcp import TCPListener as cls
            else:
                from .sharding import ShardListener as cls
            listener = cls(self, lc, f"{lc.kind}:{lc.port}")
            srv = await listener.start()
            self.stream_servers.append(listener)
            self.servers.append(srv)
            self.addresses[f"{lc.kind}[{i}]"] = srv.sockets[0].getsockname()[:2]
        t = cfg.telemetry
        if t.metrics_port is not None:
            self.metrics_server = await serve_metrics(self.metrics, t.metrics_address, t.metrics_port)
            self.addresses["metrics"] = self.metrics_server.sockets[0].getsockname()[:2]
        log.info("ambassador listening on %s", ", ".join(f"{k}={h}:{p}" for k, (h, p) in self.addresses.items()))

    def install_signal_handlers(self) -> None:
        self.loop.add_signal_handler(signal.SIGTERM, lambda: self.loop.create_task(self.shutdown()))
        self.loop.add_signal_handler(signal.SIGINT, lambda: self.loop.create_task(self.shutdown()))
        self.loop.add_signal_handler(signal.SIGHUP, lambda: self.loop.create_task(self.reload()))

    async def reload(self) -> bool:
        """Re-read the file. A bad file changes nothing; a good one replaces routes and upstreams for
        new requests while calls in flight finish on the old ones. Listener addresses need a restart."""
        try:
            new = configfile.load(self.config.source)
        except configfile.ConfigError as e:
            for line in e.lines:
                log.error("reload refused: %s", line)
            return False
        old = self.config
        if new.listener != old.listener or new.stream_listeners != old.stream_listeners \
                or new.telemetry.metrics_port != old.telemetry.metrics_port:
            log.warning("reload: listener changes take effect only after a restart")
        runtime = Runtime(new, self.metrics, self.loop)
        await runtime.start()
        previous, self.runtime = self.runtime, runtime
        self.config = new
        previous.retire()
        self.access_log.close()  # reopen: SIGHUP after log rotation starts a new file
        self.access_log = AccessLog(new.telemetry.access_log)
        log.info("configuration reloaded from %s", new.source)
        return True

    async def shutdown(self) -> None:
        """Stop accepting, let calls in flight finish (up to drain_timeout), then stop."""
        if self.draining:
            return
        self.draining = True
        for srv in self.servers:
            srv.close()
        if self.http is not None:
            self.http.draining = True
            for cc in list(self.http.clients):
                cc.draining = True
                if not cc.queue:  # idle between requests
                    cc.closed = True
                    cc.transport.close()
        for listener in self.stream_servers:
            listener.drain()
        limit = self.config.listener.drain_timeout if self.config.listener else 5.0
        try:
            async with asyncio.timeout(limit):
                while (self.http is not None and self.http.clients) or any(s.active for s in self.stream_servers):
                    await asyncio.sleep(0.01)
        except TimeoutError:
            log.warning("shutdown: drain timeout reached, closing remaining connections")
            if self.http is not None:
                for cc in list(self.http.clients):
                    cc.transport.abort()
            for listener in self.stream_servers:
                listener.abort()
        if self.metrics_server is not None:
            self.metrics_server.close()
        self.runtime.close()
        self.access_log.close()
        self.tracing.shutdown()
        self.stopped.set()


async def serve(cfg: Config, ready=None) -> None:
    app = App(cfg)
    await app.start()
    app.install_signal_handlers()
    # Everything loaded so far lives for the whole process: keep the collector from rescanning it,
    # and collect young objects less often (each call allocates a few dozen short-lived ones, freed
    # by reference counting; the cycle collector only has to find the rare cycle).
    gc.collect()
    gc.freeze()
    gc.set_threshold(20000, 20, 50)
    if ready is not None:
        ready(app)
    await app.stopped.wait()


def run(cfg: Config) -> None:
    try:
        import uvloop
    except ImportError:
        asyncio.run(serve(cfg))
    else:
        uvloop.run(serve(cfg))
