"""Configuration validation: one clear line (file, key, why) per mistake."""
from __future__ import annotations

import pytest
import yaml

from ambassador.configfile import ConfigError, load, parse_duration


def write(tmp_path, doc) -> str:
    p = tmp_path / "amb.yaml"
    p.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return str(p)


def errors(tmp_path, doc) -> list[str]:
    with pytest.raises(ConfigError) as e:
        load(write(tmp_path, doc))
    return e.value.lines


GOOD = {
    "listener": {"address": "127.0.0.1", "port": 15001},
    "upstreams": {"orders": {"instances": ["orders-1.internal:8443", "orders-2.internal:8443"],
                             "balance": "least_request",
                             "breaker": {"window": 20, "trip_ratio": 0.5, "open_for": "5s", "half_open_probes": 1}}},
    "routes": [{"match": {"path_prefix": "/lookup/"}, "upstream": "orders", "timeout": "5s", "per_try_timeout": "2s",
                "retry": {"max": 2, "on": ["connect-failure", "reset", 502, 503, 504, "timeout"],
                          "backoff": "25ms..1s"}},
               {"match": {"path_prefix": "/orders", "method": "POST"}, "upstream": "orders", "retry": {"max": 0}}],
    "retry_budget": {"ratio": 0.2, "min_per_second": 10},
    "telemetry": {"metrics_port": 15090, "access_log": "stdout", "otlp_endpoint": None},
}


def test_issue_example_is_valid(tmp_path):
    cfg = load(write(tmp_path, GOOD))
    r = cfg.routes[0]
    assert (r.timeout, r.per_try_timeout, r.retry.max, r.retry.backoff_base, r.retry.backoff_max) == (5, 2, 2, 0.025, 1)
    assert cfg.upstreams["orders"].balance == "least_request"
    assert cfg.routes[1].methods == frozenset({"POST"}) and cfg.routes[1].retry.max == 0


ISSUE_TEXT = """
listener: {address: 127.0.0.1, port: 15001}
upstreams:
  orders:
    instances: ["orders-1.internal:8443", "orders-2.internal:8443"]
    balance: least_request
    breaker: {window: 20, trip_ratio: 0.5, open_for: 5s, half_open_probes: 1}
routes:
  - match: {path_prefix: /lookup/}
    upstream: orders
    timeout: 5s
    per_try_timeout: 2s
    retry: {max: 2, on: [connect-failure, reset, 502, 503, 504, timeout], backoff: 25ms..1s}
  - match: {path_prefix: /orders, method: POST}
    upstream: orders
    retry: {max: 0}
retry_budget: {ratio: 0.2, min_per_second: 10}
telemetry: {metrics_port: 15090, access_log: stdout, otlp_endpoint: null}
"""


def test_issue_example_text_with_bare_on_key(tmp_path):
    cfg = load(write(tmp_path, ISSUE_TEXT))
    assert cfg.routes[0].retry.on == frozenset({"connect-failure", "reset", "timeout", 502, 503, 504})
    assert cfg.upstreams["orders"].breaker.open_for == 5


def test_durations():
    assert parse_duration("25ms") == 0.025 and parse_duration("2s") == 2 and parse_duration("1.5m") == 90
    assert parse_duration(3) == 3.0
    for bad in ("fast", "-1s", "1 parsec", True):
        with pytest.raises(ValueError):
            parse_duration(bad)


@pytest.mark.parametrize("address", ["0.0.0.0", "::", "10.1.2.3"])
def test_non_loopback_listener_refused_unless_forced(tmp_path, address):
    doc = dict(GOOD, listener={"address": address, "port": 15001})
    lines = errors(tmp_path, doc)
    assert len(lines) == 1 and lines[0].startswith(f"{tmp_path}/amb.yaml: listener.address: {address} is not a loopback")
    load(write(tmp_path, dict(GOOD, listener={"address": address, "port": 15001, "force_bind": True})))


def test_every_mistake_reported_one_line_each(tmp_path):
    doc = {
        "listener": {"address": "127.0.0.1", "port": 99999, "colour": "red"},
        "upstreams": {
            "a": {"instances": ["no-port"], "balance": "random", "protocol": "spdy"},
            "b": {"dns": "b.internal:80", "instances": ["x:1"]},
            "c": {"instances": ["c:1"], "tls": {"ca": "missing.pem", "cert": "c.pem"},
                  "token": {"token_url": "ftp://x", "client_id": "id"}},
            "d": {"instances": ["d:1"], "breaker": {"trip_ratio": 1.5, "window": 0}},
        },
        "routes": [
            {"match": {"path_prefix": "lookup"}, "upstream": "nope", "timeout": "1s", "per_try_timeout": "2s"},
            {"match": {"path": "/x", "method": 5}, "upstream": "d", "retry": {"on": ["sometimes"], "backoff": "1s..1ms"}},
        ],
        "telemetry": {"metrics_address": "0.0.0.0", "otlp_endpoint": "collector:4318"},
    }
    lines = errors(tmp_path, doc)
    src = f"{tmp_path}/amb.yaml"
    expected = [
        "listener.colour: unknown key", "listener.port: must be a port number",
        "upstreams.a.instances[0]: must be 'host:port'", "upstreams.a.balance: must be round_robin or least_request",
        "upstreams.a.protocol: must be http1 or http2",
        "upstreams.b: set exactly one of instances or dns",
        "upstreams.c.tls.ca: file not found: missing.pem", "upstreams.c.tls: cert and key go together",
        "upstreams.c.token.token_url: must be an http(s) URL", "upstreams.c.token: set exactly one of client_secret",
        "upstreams.d.breaker.window: must be at least 1", "upstreams.d.breaker.trip_ratio: must be a number in (0, 1]",
        "routes[0].match.path_prefix: must start with '/'", "routes[0].upstream: no upstream named 'nope'",
        "routes[0].per_try_timeout: (2s) must not exceed timeout (1s)",
        "routes[1].match.method: must be a method name", "routes[1].retry.on[0]: must be one of",
        "routes[1].retry.backoff: needs 0 < BASE <= MAX",
        "telemetry.metrics_address: 0.0.0.0 is not a loopback address",
        "telemetry.otlp_endpoint: must be an http(s) URL",
    ]
    for want in expected:
        assert any(line.startswith(f"{src}: {want}") for line in lines), (want, lines)
    assert all("\n" not in line and line.startswith(src + ": ") for line in lines)


def test_yaml_syntax_error_names_line(tmp_path):
    lines = errors(tmp_path, "listener: {port: 1\nroutes: [")
    assert len(lines) == 1 and "invalid YAML" in lines[0] and ": line " in lines[0]


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError) as e:
        load(tmp_path / "absent.yaml")
    assert e.value.lines[0].startswith(f"{tmp_path}/absent.yaml: (file): cannot read")


def test_listener_or_stream_listener_required_and_routes(tmp_path):
    assert any("listener: is required" in x for x in errors(tmp_path, {"upstreams": {}}))
    lines = errors(tmp_path, {"listener": {"port": 1}, "upstreams": {"a": {"instances": ["a:1"]}}})
    assert lines == [f"{tmp_path}/amb.yaml: routes: at least one route is required for the HTTP listener"]


def test_relative_files_resolve_against_config_directory(tmp_path):
    (tmp_path / "ca.pem").write_text("x")
    doc = dict(GOOD, upstreams={"orders": {"instances": ["o:1"], "tls": {"ca": "ca.pem"}}})
    cfg = load(write(tmp_path, doc))
    assert cfg.upstreams["orders"].tls.ca == str(tmp_path / "ca.pem")


def test_file_that_is_not_utf8_is_one_config_error(tmp_path):
    # Found by the fuzz target ambassador_config: read_text() raised UnicodeDecodeError.
    p = tmp_path / "amb.yaml"
    p.write_bytes(b"listener: {address: 127.0.0.1, port: 15001}\n# \x80\n")
    with pytest.raises(ConfigError) as e:
        load(p)
    assert len(e.value.lines) == 1 and "invalid YAML" in e.value.lines[0] and "#x0080" in e.value.lines[0]


@pytest.mark.parametrize("upstream", [[], {"a": 1}, ["orders"]])
def test_route_upstream_that_is_not_a_name_is_one_config_error(tmp_path, upstream):
    # Found by the fuzz target ambassador_config: a list or mapping here raised TypeError (unhashable).
    doc = dict(GOOD, routes=[{"match": {"path_prefix": "/"}, "upstream": upstream}])
    lines = errors(tmp_path, doc)
    assert len(lines) == 1 and "routes[0].upstream: no upstream named" in lines[0]


def test_stream_listener_upstream_that_is_not_a_name_is_one_config_error(tmp_path):
    doc = dict(GOOD, tcp_listeners=[{"port": 15002, "upstream": ["orders"]}])
    lines = errors(tmp_path, doc)
    assert len(lines) == 1 and ".upstream: no upstream named" in lines[0]


def test_shard_listener_protocol_that_is_not_a_name_is_one_config_error(tmp_path):
    doc = dict(GOOD, shard_listeners=[{"port": 15003, "upstream": "orders", "protocol": ["redis"]}])
    lines = errors(tmp_path, doc)
    assert len(lines) == 1 and "shard_listeners[0].protocol: must be one of memcached, redis" in lines[0]
