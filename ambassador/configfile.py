"""Reading the configuration file: YAML kept in version control, validated whole at start into
the dataclasses of ``config``.

Every mistake becomes one line ``FILE: KEY: WHY``; all of them are collected before failing so an
operator fixes a file in one pass.
"""
from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any

import yaml

from .config import (
    RETRY_CONDITIONS,
    BreakerConfig,
    BudgetConfig,
    Config,
    DNSConfig,
    FallbackConfig,
    ListenerConfig,
    OutlierConfig,
    PoolConfig,
    RetryConfig,
    RouteConfig,
    StreamListenerConfig,
    TelemetryConfig,
    TLSConfig,
    TokenConfig,
    UpstreamConfig,
)
from .errors import AmbassadorError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


class ConfigError(AmbassadorError):
    """One or more configuration mistakes, one line each."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        super().__init__("\n".join(lines))


def parse_duration(value: Any) -> float:
    """'25ms', '2s', '1.5m', or a bare number of seconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration like 250ms or 2s")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError("must not be negative")
        return float(value)
    if isinstance(value, str):
        m = _DURATION.match(value)
        if m:
            return float(m.group(1)) * _UNIT[m.group(2)]
    raise ValueError(f"expected a duration like 250ms or 2s, got {value!r}")


def is_loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


class _Checker:
    """Walks the YAML tree, recording one line per mistake with its dotted key."""

    def __init__(self, source: str, base_dir: Path):
        self.source = source
        self.base_dir = base_dir
        self.errors: list[str] = []

    def err(self, key: str, why: str) -> None:
        self.errors.append(f"{self.source}: {key}: {why}")

    def mapping(self, node: Any, key: str, allowed: set[str], required: set[str] = frozenset()) -> dict:
        if node is None:
            node = {}
        if not isinstance(node, dict):
            self.err(key, f"must be a mapping, got {type(node).__name__}")
            return {}
        for k in node:
            if k not in allowed:
                self.err(f"{key}.{k}" if key else str(k), f"unknown key (allowed: {', '.join(sorted(allowed))})")
        for k in sorted(required):
            if k not in node:
                self.err(f"{key}.{k}" if key else k, "is required")
        return node

    def duration(self, node: dict, key: str, name: str, default: float, positive: bool = True) -> float:
        if name not in node:
            return default
        try:
            value = parse_duration(node[name])
        except ValueError as e:
            self.err(f"{key}.{name}", str(e))
            return default
        if positive and value <= 0:
            self.err(f"{key}.{name}", "must be greater than zero")
            return default
        return value

    def integer(self, node: dict, key: str, name: str, default: int, lo: int, hi: int | None = None) -> int:
        if name not in node:
            return default
        value = node[name]
        if isinstance(value, bool) or not isinstance(value, int):
            self.err(f"{key}.{name}", f"must be an integer, got {value!r}")
            return default
        if value < lo or (hi is not None and value > hi):
            self.err(f"{key}.{name}", f"must be between {lo} and {hi}" if hi is not None else f"must be at least {lo}")
            return default
        return value

    def ratio(self, node: dict, key: str, name: str, default: float, allow_zero: bool = False) -> float:
        if name not in node:
            return default
        value = node[name]
        if (isinstance(value, bool) or not isinstance(value, (int, float)) or value > 1 or value < 0
                or (value == 0 and not allow_zero)):
            self.err(f"{key}.{name}", f"must be a number in {'[0, 1]' if allow_zero else '(0, 1]'}, got {value!r}")
            return default
        return float(value)

    def boolean(self, node: dict, key: str, name: str, default: bool) -> bool:
        if name not in node:
            return default
        if not isinstance(node[name], bool):
            self.err(f"{key}.{name}", f"must be true or false, got {node[name]!r}")
            return default
        return node[name]

    def string(self, node: dict, key: str, name: str, default: str | None = None) -> str | None:
        if name not in node or node[name] is None:
            return default
        if not isinstance(node[name], str) or not node[name]:
            self.err(f"{key}.{name}", f"must be a non-empty string, got {node[name]!r}")
            return default
        return node[name]

    def file(self, node: dict, key: str, name: str) -> str | None:
        value = self.string(node, key, name)
        if value is None:
            return None
        path = Path(value)
        if not path.is_absolute():
            path = self.base_dir / path
        if not path.is_file():
            self.err(f"{key}.{name}", f"file not found: {value}")
            return None
        return str(path)

    def port(self, node: dict, key: str, name: str = "port", required: bool = True) -> int | None:
        if name not in node or node[name] is None:
            if required:
                self.err(f"{key}.{name}", "is required")
            return None
        value = node[name]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
            self.err(f"{key}.{name}", f"must be a port number 0-65535, got {value!r}")
            return None
        return value

    def hostport(self, value: Any, key: str) -> tuple[str, int] | None:
        if not isinstance(value, str) or not value:
            self.err(key, f"must be 'host:port', got {value!r}")
            return None
        host, sep, port = value.rpartition(":")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
            self.err(key, f"must be 'host:port' with a port 1-65535, got {value!r}")
            return None
        return host, int(port)

    def address(self, node: dict, key: str, default: str) -> str:
        value = self.string(node, key, "address", default)
        if value != "localhost":
            try:
                ipaddress.ip_address(value)
            except ValueError:
                self.err(f"{key}.address", f"must be an IP address or 'localhost', got {value!r}")
        return value

    def bind(self, node: dict, key: str) -> tuple[str, int | None, bool]:
        address = self.address(node, key, "127.0.0.1")
        port = self.port(node, key)
        force = self.boolean(node, key, "force_bind", False)
        if not force and not is_loopback(address):
            self.err(f"{key}.address", f"{address} is not a loopback address; the proxy adds credentials for "
                     "anyone who can reach it, so it binds to loopback only (set force_bind: true to override)")
        return address, port, force


def load(path: str | Path) -> Config:
    """Read and validate a configuration file; raise ConfigError listing every mistake."""
    path = Path(path)
    source = str(path)
    try:
        text = path.read_bytes()  # YAML's own decoding: UTF-8/16 by BOM, a YAMLError when it is neither
    except OSError as e:
        raise ConfigError([f"{source}: (file): cannot read: {e.strerror or e}"]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "(file)"
        raise ConfigError([f"{source}: {where}: invalid YAML: {getattr(e, 'problem', None) or e}"]) from None
    return build(data, source, path.parent)


def build(data: Any, source: str, base_dir: Path) -> Config:
    c = _Checker(source, base_dir)
    top = c.mapping(data, "", {"listener", "upstreams", "routes", "retry_budget", "telemetry",
                               "tcp_listeners", "shard_listeners"})
    listener = None
    if top.get("listener") is not None:
        node = c.mapping(top["listener"], "listener",
                         {"address", "port", "force_bind", "drain_timeout", "retry_buffer"}, {"port"})
        address, port, force = c.bind(node, "listener")
        listener = ListenerConfig(
            address, port if port is not None else 0, force,
            c.duration(node, "listener", "drain_timeout", 30.0),
            c.integer(node, "listener", "retry_buffer", 65536, 0),
        )

    upstreams: dict[str, UpstreamConfig] = {}
    known = set(top.get("upstreams") or {}) if isinstance(top.get("upstreams"), dict) else set()
    up_nodes = c.mapping(top.get("upstreams"), "upstreams", known)
    for name, node in up_nodes.items():
        u = _upstream(c, str(name), node)
        if u is not None:
            upstreams[str(name)] = u

    routes: list[RouteConfig] = []
    route_nodes = top.get("routes") or []
    if not isinstance(route_nodes, list):
        c.err("routes", "must be a list")
        route_nodes = []
    for i, node in enumerate(route_nodes):
        r = _route(c, i, node, upstreams, up_nodes)
        if r is not None:
            routes.append(r)

    streams: list[StreamListenerConfig] = []
    for section, kinds in (("tcp_listeners", {"tcp"}), ("shard_listeners", {"redis", "memcached"})):
        nodes = top.get(section) or []
        if not isinstance(nodes, list):
            c.err(section, "must be a list")
            continue
        for i, node in enumerate(nodes):
            key = f"{section}[{i}]"
            allowed = {"address", "port", "upstream", "force_bind", "connect_timeout"}
            if section == "shard_listeners":
                allowed.add("protocol")
            n = c.mapping(node, key, allowed, {"port", "upstream"} | ({"protocol"} if section == "shard_listeners" else set()))
            address, port, force = c.bind(n, key)
            kind = "tcp"
            if section == "shard_listeners":
                kind = n.get("protocol")
                if not isinstance(kind, str) or kind not in kinds:
                    c.err(f"{key}.protocol", f"must be one of {', '.join(sorted(kinds))}, got {kind!r}")
                    continue
            upstream = n.get("upstream")
            if upstream is not None and not (isinstance(upstream, str) and upstream in up_nodes):
                c.err(f"{key}.upstream", f"no upstream named {upstream!r}")
                continue
            if port is not None and upstream is not None:
                streams.append(StreamListenerConfig(kind, address, port, upstream, force,
                                                    c.duration(n, key, "connect_timeout", 2.0)))

    budget_node = c.mapping(top.get("retry_budget"), "retry_budget", {"ratio", "min_per_second"})
    budget = BudgetConfig(
        c.ratio(budget_node, "retry_budget", "ratio", 0.2, allow_zero=True),
        _nonneg_number(c, budget_node, "retry_budget", "min_per_second", 10.0),
    )

    t = c.mapping(top.get("telemetry"), "telemetry",
                  {"metrics_address", "metrics_port", "access_log", "otlp_endpoint", "service_name", "tracing"})
    metrics_address = c.string(t, "telemetry", "metrics_address", "127.0.0.1")
    if not is_loopback(metrics_address):
        c.err("telemetry.metrics_address", f"{metrics_address} is not a loopback address; metrics stay on loopback")
    access_log = t.get("access_log", "stdout")
    if access_log is not None and (not isinstance(access_log, str) or not access_log):
        c.err("telemetry.access_log", "must be stdout, stderr, a file path or null")
        access_log = None
    elif access_log not in (None, "stdout", "stderr") and not Path(access_log).is_absolute():
        access_log = str(base_dir / access_log)
    otlp = c.string(t, "telemetry", "otlp_endpoint")
    if otlp is not None and not otlp.startswith(("http://", "https://")):
        c.err("telemetry.otlp_endpoint", f"must be an http(s) URL, got {otlp!r}")
    telemetry = TelemetryConfig(
        metrics_address, c.port(t, "telemetry", "metrics_port", required=False), access_log, otlp,
        c.string(t, "telemetry", "service_name", "ambassador"), c.boolean(t, "telemetry", "tracing", True),
    )

    if listener is None and not streams:
        c.err("listener", "is required (or at least one tcp_listeners/shard_listeners entry)")
    if listener is not None and not routes and not c.errors:
        c.err("routes", "at least one route is required for the HTTP listener")
    if c.errors:
        raise ConfigError(c.errors)
    return Config(source, listener, upstreams, tuple(routes), budget, telemetry, tuple(streams))


def _nonneg_number(c: _Checker, node: dict, key: str, name: str, default: float) -> float:
    if name not in node:
        return default
    v = node[name]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        c.err(f"{key}.{name}", f"must be a number >= 0, got {v!r}")
        return default
    return float(v)


def _upstream(c: _Checker, name: str, node: Any) -> UpstreamConfig | None:
    key = f"upstreams.{name}"
    before = len(c.errors)
    n = c.mapping(node, key, {"instances", "dns", "balance", "host", "tls", "token",
                              "breaker", "outlier", "pool", "protocol"})
    instances: list[tuple[str, int]] = []
    dns = None
    if ("instances" in n) == ("dns" in n):
        c.err(key, "set exactly one of instances or dns")
    if "instances" in n:
        if not isinstance(n["instances"], list) or not n["instances"]:
            c.err(f"{key}.instances", "must be a non-empty list of 'host:port'")
        else:
            for i, v in enumerate(n["instances"]):
                hp = c.hostport(v, f"{key}.instances[{i}]")
                if hp:
                    instances.append(hp)
    if "dns" in n:
        d = n["dns"]
        if isinstance(d, str):
            d = {"name": d}
        dn = c.mapping(d, f"{key}.dns", {"name", "nameserver", "refresh", "min_ttl"}, {"name"})
        hp = c.hostport(dn.get("name"), f"{key}.dns.name") if "name" in dn else None
        ns = None
        if dn.get("nameserver") is not None:
            ns = c.hostport(dn["nameserver"], f"{key}.dns.nameserver")
        if hp:
            dns = DNSConfig(hp[0], hp[1], ns, c.duration(dn, f"{key}.dns", "refresh", 5.0),
                            c.duration(dn, f"{key}.dns", "min_ttl", 1.0))
    protocol = n.get("protocol", "http1")
    if protocol not in ("http1", "http2"):
        c.err(f"{key}.protocol", f"must be http1 or http2, got {protocol!r}")
    balance = n.get("balance", "round_robin")
    if balance not in ("round_robin", "least_request"):
        c.err(f"{key}.balance", f"must be round_robin or least_request, got {balance!r}")
    tls = None
    if n.get("tls") is not None:
        tn = c.mapping(n["tls"], f"{key}.tls", {"ca", "cert", "key", "server_name", "verify", "reload_check"})
        cert, keyf = c.file(tn, f"{key}.tls", "cert"), c.file(tn, f"{key}.tls", "key")
        if ("cert" in tn) != ("key" in tn):
            c.err(f"{key}.tls", "cert and key go together (mutual TLS needs both)")
        verify = c.boolean(tn, f"{key}.tls", "verify", True)
        tls = TLSConfig(c.file(tn, f"{key}.tls", "ca"), cert, keyf, c.string(tn, f"{key}.tls", "server_name"),
                        verify, c.duration(tn, f"{key}.tls", "reload_check", 1.0))
    token = None
    if n.get("token") is not None:
        tk = f"{key}.token"
        tn = c.mapping(n["token"], tk, {"token_url", "client_id", "client_secret", "client_secret_file", "scope",
                                        "audience", "auth", "ca", "timeout", "renew_at"}, {"token_url", "client_id"})
        url = c.string(tn, tk, "token_url")
        if url is not None and not url.startswith(("http://", "https://")):
            c.err(f"{tk}.token_url", f"must be an http(s) URL, got {url!r}")
        if (tn.get("client_secret") is not None) == (tn.get("client_secret_file") is not None):
            c.err(tk, "set exactly one of client_secret or client_secret_file")
        auth = tn.get("auth", "basic")
        if auth not in ("basic", "post"):
            c.err(f"{tk}.auth", f"must be basic or post, got {auth!r}")
        token = TokenConfig(url or "", c.string(tn, tk, "client_id") or "", c.string(tn, tk, "client_secret"),
                            c.file(tn, tk, "client_secret_file"), c.string(tn, tk, "scope"),
                            c.string(tn, tk, "audience"), auth, c.file(tn, tk, "ca"),
                            c.duration(tn, tk, "timeout", 5.0), c.ratio(tn, tk, "renew_at", 0.8))
    bn = c.mapping(n.get("breaker"), f"{key}.breaker", {"window", "trip_ratio", "min_calls", "open_for", "half_open_probes"})
    window = c.integer(bn, f"{key}.breaker", "window", 20, 1)
    breaker = BreakerConfig(window, c.ratio(bn, f"{key}.breaker", "trip_ratio", 0.5),
                            c.integer(bn, f"{key}.breaker", "min_calls", min(5, window), 1, window),
                            c.duration(bn, f"{key}.breaker", "open_for", 5.0),
                            c.integer(bn, f"{key}.breaker", "half_open_probes", 1, 1))
    on = c.mapping(n.get("outlier"), f"{key}.outlier", {"consecutive_failures", "eject_for", "max_ejected_ratio"})
    outlier = OutlierConfig(c.integer(on, f"{key}.outlier", "consecutive_failures", 5, 1),
                            c.duration(on, f"{key}.outlier", "eject_for", 10.0),
                            c.ratio(on, f"{key}.outlier", "max_ejected_ratio", 0.5, allow_zero=True))
    pn = c.mapping(n.get("pool"), f"{key}.pool", {"max_idle", "idle_timeout", "connect_timeout"})
    pool = PoolConfig(c.integer(pn, f"{key}.pool", "max_idle", 64, 0),
                      c.duration(pn, f"{key}.pool", "idle_timeout", 30.0),
                      c.duration(pn, f"{key}.pool", "connect_timeout", 1.0))
    if len(c.errors) > before:
        return None
    return UpstreamConfig(name, tuple(instances), dns, balance, c.string(n, key, "host"),
                          tls, token, breaker, outlier, pool, protocol)


def _route(c: _Checker, i: int, node: Any, upstreams: dict, up_nodes: dict) -> RouteConfig | None:
    key = f"routes[{i}]"
    before = len(c.errors)
    n = c.mapping(node, key, {"name", "match", "upstream", "timeout", "per_try_timeout", "retry", "fallback"},
                  {"upstream"})
    m = c.mapping(n.get("match"), f"{key}.match", {"path_prefix", "path", "method", "headers"})
    prefix, path = c.string(m, f"{key}.match", "path_prefix"), c.string(m, f"{key}.match", "path")
    for k, v in (("path_prefix", prefix), ("path", path)):
        if v is not None and not v.startswith("/"):
            c.err(f"{key}.match.{k}", f"must start with '/', got {v!r}")
    if prefix is not None and path is not None:
        c.err(f"{key}.match", "set path_prefix or path, not both")
    methods = None
    if "method" in m:
        mv = m["method"]
        mv = [mv] if isinstance(mv, str) else mv
        if not isinstance(mv, list) or not mv or not all(isinstance(x, str) and x.isalpha() for x in mv):
            c.err(f"{key}.match.method", f"must be a method name or a list of them, got {m['method']!r}")
        else:
            methods = frozenset(x.upper() for x in mv)
    headers = []
    hn = m.get("headers") or {}
    if not isinstance(hn, dict):
        c.err(f"{key}.match.headers", "must be a mapping of header name to value")
    else:
        for hk, hv in hn.items():
            if not isinstance(hk, str) or not isinstance(hv, (str, int)):
                c.err(f"{key}.match.headers.{hk}", "header name and value must be strings")
            else:
                headers.append((hk.lower(), str(hv)))
    upstream = n.get("upstream")
    if upstream is not None and not (isinstance(upstream, str) and upstream in up_nodes):
        c.err(f"{key}.upstream", f"no upstream named {upstream!r} (defined: {', '.join(sorted(map(str, up_nodes))) or 'none'})")
    timeout = c.duration(n, key, "timeout", 15.0)
    per_try = c.duration(n, key, "per_try_timeout", timeout)
    if per_try > timeout:
        c.err(f"{key}.per_try_timeout", f"({per_try:g}s) must not exceed timeout ({timeout:g}s), which bounds every try")
    retry = RetryConfig()
    if "retry" in n:
        rk = f"{key}.retry"
        if isinstance(n["retry"], dict) and True in n["retry"]:
            # YAML 1.1 reads a bare `on:` key as the boolean true; it can only mean "on" here.
            n["retry"] = {("on" if k is True else k): v for k, v in n["retry"].items()}
        rn = c.mapping(n["retry"], rk, {"max", "on", "backoff", "safe"})
        on = RetryConfig.on
        if "on" in rn:
            if not isinstance(rn["on"], list):
                c.err(f"{rk}.on", "must be a list")
            else:
                parsed = set()
                for j, v in enumerate(rn["on"]):
                    if isinstance(v, int) and not isinstance(v, bool) and 400 <= v <= 599:
                        parsed.add(v)
                    elif isinstance(v, str) and v in RETRY_CONDITIONS:
                        parsed.add(v)
                    else:
                        c.err(f"{rk}.on[{j}]",
                              f"must be one of {', '.join(sorted(RETRY_CONDITIONS))} or a status 400-599, got {v!r}")
                on = frozenset(parsed)
        base, cap = RetryConfig.backoff_base, RetryConfig.backoff_max
        if "backoff" in rn:
            parts = str(rn["backoff"]).split("..")
            try:
                if len(parts) != 2:
                    raise ValueError("must be 'BASE..MAX', e.g. 25ms..1s")
                base, cap = parse_duration(parts[0]), parse_duration(parts[1])
                if base <= 0 or cap < base:
                    raise ValueError("needs 0 < BASE <= MAX")
            except ValueError as e:
                c.err(f"{rk}.backoff", str(e))
        retry = RetryConfig(c.integer(rn, rk, "max", 2, 0, 10), on, base, cap, c.boolean(rn, rk, "safe", False))
    fallback = None
    if n.get("fallback") is not None:
        fk = f"{key}.fallback"
        fv = n["fallback"]
        if fv == "last_good":
            fallback = FallbackConfig(True, 200, b"", ())
        else:
            fn = c.mapping(fv, fk, {"status", "body", "content_type", "headers"}, {"status"})
            status = c.integer(fn, fk, "status", 200, 100, 599)
            body = fn.get("body", "")
            if not isinstance(body, str):
                c.err(f"{fk}.body", "must be a string")
                body = ""
            hdrs = [("content-type", c.string(fn, fk, "content_type", "application/json"))]
            extra = fn.get("headers") or {}
            if not isinstance(extra, dict):
                c.err(f"{fk}.headers", "must be a mapping")
            else:
                hdrs += [(str(k).lower(), str(v)) for k, v in extra.items()]
            fallback = FallbackConfig(False, status, body.encode(), tuple(hdrs))
    if len(c.errors) > before:
        return None
    name = n.get("name") or (prefix or path or "/") + ("" if methods is None else " " + ",".join(sorted(methods)))
    return RouteConfig(i, prefix, path, methods, tuple(headers), upstream, timeout, per_try, retry, fallback, str(name))
