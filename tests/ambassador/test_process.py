"""The proxy as a process: console script, manage.py command, SIGTERM drain, SIGHUP reload."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import requests
import yaml

from .helpers import Resp, free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]


def start(tmp_path, cfg: dict, *cmd_prefix) -> tuple[subprocess.Popen, int]:
    port = free_port()
    cfg = dict(cfg, listener={"address": "127.0.0.1", "port": port, "drain_timeout": "5s"})
    cfg.setdefault("telemetry", {"access_log": str(tmp_path / "access.log")})
    path = tmp_path / "amb.yaml"
    path.write_text(yaml.safe_dump(cfg))
    cmd = list(cmd_prefix or (sys.executable, "-m", "ambassador")) + ["--config", str(path)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))

    def up():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            assert proc.poll() is None, proc.stderr.read().decode()
            return False
    wait_for(up, timeout=15)
    return proc, port


def stop(proc):
    if proc.poll() is None:
        proc.kill()
    proc.wait(5)


def test_console_script_check_and_errors(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump({"listener": {"port": 0}, "upstreams": {"a": {"instances": ["a:1"]}},
                                    "routes": [{"upstream": "a"}]}))
    r = subprocess.run([sys.executable, "-m", "ambassador", "--config", str(good), "--check"], cwd=ROOT,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and "configuration is valid" in r.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"listener": {"address": "0.0.0.0", "port": 1},
                                   "upstreams": {"a": {"instances": ["a"]}}, "routes": [{"upstream": "b"}]}))
    r = subprocess.run([sys.executable, "-m", "ambassador", "--config", str(bad)], cwd=ROOT,
                       capture_output=True, text=True, timeout=30)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 3
    assert all(line.startswith(f"{bad}: ") for line in lines)


def test_manage_py_command_runs_the_proxy(tmp_path, upstream):
    u = upstream("a")
    db = tmp_path / "dev.sqlite3"  # the project's dev settings; the command must never open the database
    proc, port = start(tmp_path, {"upstreams": {"svc": {"instances": [u.addr]}}, "routes": [{"upstream": "svc"}]},
                       "env", "DJANGO_SETTINGS_MODULE=idp.settings.dev", f"IDP_DEV_DB={db}",
                       sys.executable, "manage.py", "ambassador")
    try:
        assert requests.get(f"http://127.0.0.1:{port}/via-manage", timeout=5).json()["target"] == "/via-manage"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    assert not db.exists()


def test_sigterm_lets_in_flight_calls_finish(tmp_path, upstream):
    u = upstream("slow", handler=lambda req: Resp(200, b"done", delay=0.8))
    proc, port = start(tmp_path, {"upstreams": {"svc": {"instances": [u.addr]}}, "routes": [{"upstream": "svc"}]})
    result = {}

    def call():
        result["r"] = requests.get(f"http://127.0.0.1:{port}/slow", timeout=10)
    t = threading.Thread(target=call)
    t.start()
    wait_for(lambda: u.count() == 1)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    refused = False
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        refused = True
    assert refused  # no new connections once draining
    t.join(10)
    assert result["r"].status_code == 200 and result["r"].content == b"done"
    assert proc.wait(10) == 0
    log = [json.loads(x) for x in (tmp_path / "access.log").read_text().splitlines()]
    assert log[-1]["status"] == 200  # the access log was flushed on the way out


def _get_on(sock) -> dict:
    sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += sock.recv(65536)
    head, _, body = buf.partition(b"\r\n\r\n")
    length = int([h.split(b":")[1] for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")][0])
    while len(body) < length:
        body += sock.recv(65536)
    return json.loads(body)


def test_sighup_reloads_without_dropping_connections(tmp_path, upstream):
    a, b = upstream("a"), upstream("b")
    cfg = {"upstreams": {"svc": {"instances": [a.addr]}}, "routes": [{"upstream": "svc"}]}
    proc, port = start(tmp_path, cfg)
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        assert _get_on(sock)["instance"] == "a"
        path = tmp_path / "amb.yaml"
        doc = yaml.safe_load(path.read_text())
        doc["upstreams"]["svc"]["instances"] = [b.addr]
        path.write_text(yaml.safe_dump(doc))
        proc.send_signal(signal.SIGHUP)
        # The same client connection keeps working and, once reloaded, reaches the new instance.
        wait_for(lambda: _get_on(sock)["instance"] == "b")
        path.write_text("listener: [")
        proc.send_signal(signal.SIGHUP)
        time.sleep(0.3)
        assert _get_on(sock)["instance"] == "b"  # a bad file is refused; the running configuration stays
        assert proc.poll() is None
        sock.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
    err = proc.stderr.read().decode()
    assert "configuration reloaded" in err and "reload refused" in err and "invalid YAML" in err


def test_loopback_only_unless_forced(tmp_path):
    path = tmp_path / "amb.yaml"
    path.write_text(yaml.safe_dump({"listener": {"address": "0.0.0.0", "port": free_port()},
                                    "upstreams": {"a": {"instances": ["127.0.0.1:1"]}}, "routes": [{"upstream": "a"}]}))
    r = subprocess.run([sys.executable, "-m", "ambassador", "--config", str(path)], cwd=ROOT, capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "listener.address: 0.0.0.0 is not a loopback address" in r.stderr
