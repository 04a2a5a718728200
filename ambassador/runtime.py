"""The live state built from one configuration; replaced as a whole on SIGHUP."""
from __future__ import annotations

import json

from .retry import RetryBudget
from .upstream import Upstream


class Route:
    __slots__ = ("cfg", "up", "prefix", "path", "methods", "headers", "stats", "retries",
                 "breaker_rejections", "fallbacks", "last_good", "name_json", "log_names")

    def __init__(self, cfg, up: Upstream, metrics):
        self.cfg = cfg
        self.up = up
        self.prefix = cfg.path_prefix.encode() if cfg.path_prefix else None
        self.path = cfg.path.encode() if cfg.path else None
        self.methods = frozenset(m.encode() for m in cfg.methods) if cfg.methods else None
        self.headers = tuple((k.encode(), v.encode()) for k, v in cfg.headers)
        # Label lookups cost more than the increment; resolve them once per route.
        self.stats = metrics.call_stats(cfg.name, up.name)
        self.name_json = json.dumps(cfg.name, ensure_ascii=False)
        self.log_names = f'"route":{self.name_json},"upstream":{up.name_json}'  # for the access log
        self.retries = metrics.retries.labels(cfg.name, up.name)
        self.breaker_rejections = metrics.breaker_rejections.labels(up.name)
        self.fallbacks = metrics.fallbacks.labels(cfg.name)
        self.last_good = {} if cfg.fallback is not None and cfg.fallback.last_good else None



class Runtime:
    def __init__(self, config, metrics, loop):
        self.config = config
        self.upstreams = {name: Upstream(cfg, metrics, loop) for name, cfg in config.upstreams.items()}
        self.routes = [Route(r, self.upstreams[r.upstream], metrics) for r in config.routes]
        self.table = tuple((r.methods, r.path, r.prefix, r.headers, r) for r in self.routes)
        self.budget = RetryBudget(config.retry_budget)
        self.in_flight = 0
        self.retired = False
        self.closed = False

    async def start(self) -> None:
        for up in self.upstreams.values():
            await up.start()

    def match(self, req) -> Route | None:
        """The first route whose conditions (method, exact path, path prefix, header values) all hold."""
        method = req.method
        path = req.path
        for methods, exact, prefix, headers, route in self.table:
            if methods is not None and method not in methods:
                continue
            if exact is not None and path != exact:
                continue
            if prefix is not None and not path.startswith(prefix):
                continue
            if headers:
                lc = req.lc
                if any(lc.get(k) != v for k, v in headers):
                    continue
            return route
        return None

    def retire(self) -> None:
        """Replaced by a reload: finish what is in flight, then let go of the connections."""
        self.retired = True
        for up in self.upstreams.values():
            up.closed = True  # answered connections are closed rather than pooled
            for inst in up.balancer.instances:
                for conn in list(inst.idle):
                    conn.close()
                for conn in list(inst.h2):
                    conn.retire()
        if self.in_flight == 0:
            self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            for up in self.upstreams.values():
                up.close()
