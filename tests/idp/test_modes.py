"""The two modes as an operator runs them: start_dev on SQLite, start in production."""
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urljoin

import psycopg
import pytest
import requests

from tests.browser import login_form_action

ROOT = Path(__file__).resolve().parents[2]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url, deadline_s=60, proc=None):
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}: {proc.stdout.read()}")
        try:
            answer = requests.get(url, timeout=2)
            if answer.status_code != 503:  # 503: up, not ready yet (e.g. before the workers listen)
                return answer
        except requests.ConnectionError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"{url} did not answer within {deadline_s}s")


def base_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IDP_", "DJANGO_"))}
    env.update(extra)
    return env


def manage(*args, env, **kwargs):
    # -u: the output arrives as written, in order across stdout and stderr, for the tests that
    # read it line by line (a pipe would otherwise hold stdout back until a buffer fills).
    return subprocess.Popen(
        [sys.executable, "-u", "manage.py", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, **kwargs,
    )


def stop(proc):
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def admin_login(base, username, password):
    """Sign in to the console as a browser does: the console sends it to the master realm's login
    page, whose form is posted. (The session, the answer with its redirects followed.)"""
    s = requests.Session()
    page = s.get(f"{base}/admin/master/console/login/", timeout=10)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    return s, s.post(urljoin(page.url, login_form_action(page.text)),
                     data={"csrfmiddlewaretoken": token, "username": username, "password": password}, timeout=30)


def body_too_large(port):
    """The answer to a POST declaring a body one byte over the cap (10 MB, Keycloak's), read as far
    as its own length (the server may wait for the body it refused before closing)."""
    size = 10 * 1024 * 1024 + 1
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"POST /realms/master/protocol/openid-connect/token HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n" % size)
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < len(b"Request body too large."):
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0], body


def test_start_dev_serves_health_admin_and_demo_realm(tmp_path):
    http, mgmt = free_port(), free_port()
    env = base_env(
        DJANGO_SETTINGS_MODULE="idp.settings.dev", IDP_VAR_DIR=str(tmp_path),
        IDP_BOOTSTRAP_ADMIN_USERNAME="boot", IDP_BOOTSTRAP_ADMIN_PASSWORD="boot-pass-1",
    )
    proc = manage("start_dev", "--http-port", str(http), "--management-port", str(mgmt), env=env)
    try:
        ready = wait_for(f"http://127.0.0.1:{mgmt}/health/ready", proc=proc)
        assert ready.status_code == 200 and ready.json()["status"] == "UP"
        assert requests.get(f"http://127.0.0.1:{mgmt}/health/live", timeout=5).status_code == 200
        metrics = requests.get(f"http://127.0.0.1:{mgmt}/metrics", timeout=5)
        assert metrics.status_code == 200 and "process_" in metrics.text
        base = f"http://127.0.0.1:{http}"
        wait_for(f"{base}/admin/master/console/login/", proc=proc)
        # Health and metrics are never served on the public port.
        assert requests.get(f"{base}/health/ready", timeout=5).status_code == 404
        assert requests.get(f"{base}/metrics", timeout=5).status_code == 404
        # The bootstrap admin signs in to the console; a wrong password does not.
        _, bad = admin_login(base, "boot", "wrong")
        assert "/realms/master/login-actions/authenticate" in bad.url and 'id="kc-form-login"' in bad.text
        session, ok = admin_login(base, "boot", "boot-pass-1")
        assert ok.status_code == 200 and ok.url.rstrip("/").endswith("/admin/master/console"), ok.url
        assert "Log out" in ok.text or "logout" in ok.text.lower()
        # The database is the embedded SQLite file in the var directory.
        assert (tmp_path / "dev.sqlite3").exists()
        # The request log keeps parameter names, not values that carry tokens (a request is
        # logged after its answer: another request follows before the server is stopped).
        requests.get(f"{base}/realms/demo/protocol/openid-connect/logout",
                     params={"id_token_hint": "hint-secret-value", "client_id": "demo-app"}, timeout=5)
        # DEBUG is off unless IDP_DEBUG=1: no debug page listing the URL patterns.
        missing = requests.get(f"{base}/no-such-page", timeout=5)
        assert missing.status_code == 404 and "URLconf" not in missing.text
        # A body over the cap: 413 as in production, not Django's 400 page.
        assert body_too_large(http) == (b"HTTP/1.1 413 Request Entity Too Large", b"Request body too large.")
    finally:
        stop(proc)
    out = proc.stdout.read()
    assert "Demo realm 'demo' created" in out
    assert "boot-pass-1" not in out  # the admin's password is never printed
    # Nor the demo user's: it is in a file only this user can read.
    password_file = tmp_path / "demo-password.txt"
    assert password_file.stat().st_mode & 0o777 == 0o600
    demo_password = password_file.read_text().strip()
    assert len(demo_password) >= 12 and demo_password not in out
    assert "id_token_hint=REDACTED&client_id=demo-app" in out, out
    assert "hint-secret-value" not in out


@pytest.mark.parametrize(
    "missing, named",
    [("IDP_HOSTNAME", "IDP_HOSTNAME"), ("IDP_DB_URL", "IDP_DB_URL"), ("IDP_SECRET_KEY", "IDP_SECRET_KEY")],
)
def test_start_refuses_missing_setting_with_one_line(missing, named):
    env = base_env(
        DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_HOSTNAME="id.example.org",
        IDP_SECRET_KEY="x" * 50, IDP_DB_URL=os.environ["IDP_TEST_DB_URL"],
        IDP_REDIS_URL=os.environ["IDP_TEST_REDIS_URL"],
    )
    env.pop(missing)
    proc = manage("start", env=env)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1
    lines = [line for line in out.strip().splitlines() if line.strip()]
    assert len(lines) == 1, out
    assert named in lines[0] and "Traceback" not in out


def test_start_refuses_unreachable_database_with_one_line():
    env = base_env(
        DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_HOSTNAME="id.example.org",
        IDP_SECRET_KEY="x" * 50, IDP_DB_URL=f"postgresql://idp@127.0.0.1:{free_port()}/nothing",
        IDP_REDIS_URL=os.environ["IDP_TEST_REDIS_URL"],
    )
    proc = manage("start", env=env)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1
    lines = [line for line in out.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and "IDP_DB_URL" in lines[0] and "Traceback" not in out, out


@pytest.fixture
def production_database():
    """A fresh database beside the test database, for a production server process."""
    name = f"prod_{os.getpid()}"
    admin_url = os.environ["IDP_TEST_DB_URL"]
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield admin_url.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_start_production_serves_with_granian(production_database, tmp_path):
    http, mgmt = free_port(), free_port()
    env = base_env(
        DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_HOSTNAME="127.0.0.1",
        IDP_BASE_URL=f"http://127.0.0.1:{http}", IDP_SECRET_KEY="y" * 50,
        IDP_DB_URL=production_database, IDP_REDIS_URL=os.environ["IDP_TEST_REDIS_URL"],
        IDP_VAR_DIR=str(tmp_path), IDP_BOOTSTRAP_ADMIN_USERNAME="root", IDP_BOOTSTRAP_ADMIN_PASSWORD="root-pass-1",
        IDP_ACCESS_LOG="-",
    )
    proc = manage("start", "--http-port", str(http), "--management-port", str(mgmt),
                  "--bind", "127.0.0.1", "--workers", "2", env=env)
    try:
        ready = wait_for(f"http://127.0.0.1:{mgmt}/health/ready", deadline_s=90, proc=proc)
        assert ready.status_code == 200
        base = f"http://127.0.0.1:{http}"  # where it listens, whatever "localhost" resolves to first
        login = wait_for(f"{base}/admin/master/console/login/", proc=proc)
        assert login.status_code == 200
        assert requests.get(f"{base}/health/ready", timeout=5).status_code == 404
        session, ok = admin_login(base, "root", "root-pass-1")
        assert ok.url.rstrip("/").endswith("/admin/master/console"), ok.url
        # Static files of the console are served in production too.
        css = session.get(f"{base}/static/admin/css/base.css", timeout=5)
        assert css.status_code == 200
        status_line, body = body_too_large(http)
        assert status_line.startswith(b"HTTP/1.1 413") and body == b"Request body too large."
        requests.get(f"{base}/realms/master/protocol/openid-connect/logout",
                     params={"id_token_hint": "hint-secret-value"}, headers={"Referer": "https://rp.example/cb?code=c0de-secret"},
                     timeout=5)
    finally:
        stop(proc)
    out = proc.stdout.read()
    # The access log has the path, not the query or the referrer, which carry tokens.
    assert "/realms/master/protocol/openid-connect/logout" in out, out
    assert "hint-secret-value" not in out and "c0de-secret" not in out
