"""Configuration: the frozen dataclasses a configuration file becomes, with their defaults.

Built by ``configfile`` from the YAML file; the rest of the ambassador reads them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})
RETRY_CONDITIONS = frozenset({"connect-failure", "reset", "timeout"})


@dataclass(frozen=True)
class TLSConfig:
    ca: str | None
    cert: str | None
    key: str | None
    server_name: str | None
    verify: bool
    reload_check: float


@dataclass(frozen=True)
class TokenConfig:
    token_url: str
    client_id: str
    client_secret: str | None
    client_secret_file: str | None
    scope: str | None
    audience: str | None
    auth: str  # "basic" (client_secret_basic) or "post" (client_secret_post)
    ca: str | None
    timeout: float
    renew_at: float


@dataclass(frozen=True)
class BreakerConfig:
    window: int = 20
    trip_ratio: float = 0.5
    min_calls: int = 5
    open_for: float = 5.0
    half_open_probes: int = 1


@dataclass(frozen=True)
class OutlierConfig:
    consecutive_failures: int = 5
    eject_for: float = 10.0
    max_ejected_ratio: float = 0.5


@dataclass(frozen=True)
class PoolConfig:
    max_idle: int = 64
    idle_timeout: float = 30.0
    connect_timeout: float = 1.0


@dataclass(frozen=True)
class DNSConfig:
    name: str
    port: int
    nameserver: tuple[str, int] | None
    refresh: float  # used when the resolver gives no TTL (system resolver)
    min_ttl: float


@dataclass(frozen=True)
class UpstreamConfig:
    name: str
    instances: tuple[tuple[str, int], ...]
    dns: DNSConfig | None
    balance: str
    host: str | None
    tls: TLSConfig | None
    token: TokenConfig | None
    breaker: BreakerConfig
    outlier: OutlierConfig
    pool: PoolConfig
    protocol: str = "http1"  # or "http2": h2 over TLS (ALPN), h2c with prior knowledge in cleartext


@dataclass(frozen=True)
class RetryConfig:
    max: int = 2
    on: frozenset = frozenset({"connect-failure", "reset", "timeout", 502, 503, 504})
    backoff_base: float = 0.025
    backoff_max: float = 1.0
    safe: bool = False  # the route is known safe to retry for any method


@dataclass(frozen=True)
class FallbackConfig:
    last_good: bool
    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class RouteConfig:
    index: int
    path_prefix: str | None
    path: str | None
    methods: frozenset | None
    headers: tuple[tuple[str, str], ...]
    upstream: str
    timeout: float
    per_try_timeout: float
    retry: RetryConfig
    fallback: FallbackConfig | None
    name: str


@dataclass(frozen=True)
class ListenerConfig:
    address: str
    port: int
    force_bind: bool
    drain_timeout: float = 30.0
    retry_buffer: int = 65536


@dataclass(frozen=True)
class StreamListenerConfig:
    kind: str  # "tcp", "redis" or "memcached"
    address: str
    port: int
    upstream: str
    force_bind: bool
    connect_timeout: float


@dataclass(frozen=True)
class BudgetConfig:
    ratio: float = 0.2
    min_per_second: float = 10.0


@dataclass(frozen=True)
class TelemetryConfig:
    metrics_address: str = "127.0.0.1"
    metrics_port: int | None = None
    access_log: str | None = "stdout"
    otlp_endpoint: str | None = None
    service_name: str = "ambassador"
    tracing: bool = True


@dataclass(frozen=True)
class Config:
    source: str
    listener: ListenerConfig | None
    upstreams: dict[str, UpstreamConfig]
    routes: tuple[RouteConfig, ...]
    retry_budget: BudgetConfig
    telemetry: TelemetryConfig
    stream_listeners: tuple[StreamListenerConfig, ...] = field(default=())
