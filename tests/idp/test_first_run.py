"""A new user's first run: the README's commands work whatever the caller's locale and say
plainly when they need root; manage.py commands work on a fresh checkout before the first start."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from .test_modes import ROOT, base_env

# A fresh Debian machine's locale: set, but never generated.
UNGENERATED_LOCALE = {"LANG": "en_US.UTF-8", "LC_ALL": ""}


def test_test_services_start_whatever_the_callers_locale_and_directory(tmp_path):
    script = (f'set -euo pipefail; source {ROOT}/scripts/services.sh; trap services_stop EXIT; '
              'services_start >/dev/null; echo "$IDP_TEST_DB_URL"')
    private = tmp_path / "private"  # a directory the postgres user may not enter (root's home)
    private.mkdir(mode=0o700)
    done = subprocess.run(["bash", "-c", script], cwd=private, env={**os.environ, **UNGENERATED_LOCALE},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr  # no "invalid locale", no "could not change directory"
    # The server was up (stopped again by the trap): its URL named a real database.
    assert done.stdout.strip().startswith("postgresql://idp@127.0.0.1:")


def test_setup_without_root_or_sudo_says_what_to_do():
    # Not pytest's tmp_path: an ordinary user cannot reach into root's private base directory.
    with tempfile.TemporaryDirectory() as tmp:
        _setup_without_sudo(Path(tmp))


def _setup_without_sudo(tmp_path):
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup.sh", checkout / "scripts" / "setup.sh")
    bin_dir = tmp_path / "bin"  # the tools a fresh machine has, and no sudo
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "dpkg-query", "grep", "id"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    for path in (tmp_path, checkout, checkout / "scripts", bin_dir):
        path.chmod(0o755)
    command = ["bash", "scripts/setup.sh"]
    if os.geteuid() == 0:  # as an ordinary user
        command = [shutil.which("runuser") or "/usr/sbin/runuser", "-u", "nobody", "--", *command]
    done = subprocess.run(command, cwd=checkout, capture_output=True, text=True, timeout=60,
                          env={"PATH": str(bin_dir), "IDP_APT_PACKAGES": "hello-not-installed", **UNGENERATED_LOCALE})
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "setup: installing the Debian packages hello-not-installed needs root, and sudo is not installed: "
        "run this as root, or have root run: apt-get install hello-not-installed"]


STUBS = {  # stand-ins for what setup.sh runs besides plain shell tools; each notes its call in calls.log
    "dpkg-query": '[ "${@: -1}" != npm ] && [ "${@: -1}" != nodejs ] || [ -x "$BIN/npm" ] && echo "install ok installed"',
    "apt-get": ('echo "apt-get $*" >>"$LOG"; [ "$1" != install ] || '
                '{ printf "%s\\n" "#!/bin/bash" "$NPM" >"$BIN/npm"; chmod +x "$BIN/npm"; }'),
    "id": "echo 0",  # root
    "uname": "echo aarch64",  # no Argon2 build for the CPU
}
NPM = 'echo "npm $*" >>"$LOG"; mkdir -p node_modules'
PIP = 'echo "pip $*" >>"$LOG"'


def _checkout_with_stubs(tmp_path, npm):
    """A checkout with setup.sh, a venv whose pip only notes its calls, and a PATH of shell tools
    and stand-ins; returns run(*extras) -> the calls that run made."""
    checkout, bin_dir, log = tmp_path / "checkout", tmp_path / "bin", tmp_path / "calls.log"
    for path in (checkout / "scripts", checkout / "tests" / "js", checkout / ".venv" / "bin", bin_dir):
        path.mkdir(parents=True)
    for name in ("scripts/setup.sh", "pyproject.toml", "tests/js/package-lock.json"):
        shutil.copy(ROOT / name, checkout / name)
    for tool in ("bash", "dirname", "grep", "cat", "sha256sum", "cut", "sed", "sort", "tr", "rm", "touch", "mkdir",
                 "chmod"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    stubs = {bin_dir / name: body for name, body in STUBS.items()}
    stubs |= {checkout / ".venv" / "bin" / "pip": PIP, checkout / ".venv" / "bin" / "python": "exit 1"}
    if npm:
        stubs[bin_dir / "npm"] = NPM
    for path, body in stubs.items():
        path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(0o755)
    env = {"PATH": str(bin_dir), "BIN": str(bin_dir), "LOG": str(log), "NPM": NPM}

    def run(*extras):
        log.write_text("")
        done = subprocess.run(["bash", "scripts/setup.sh", *extras], cwd=checkout, env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return log.read_text().splitlines()
    return run, checkout


def test_setup_installs_debians_nodejs_and_npm_for_the_test_extra_where_npm_is_missing(tmp_path):
    run, _ = _checkout_with_stubs(tmp_path, npm=False)
    assert run("test") == ["apt-get update -qq", "apt-get install -y -qq --no-install-recommends nodejs npm",
                           "pip install -q --upgrade pip", "pip install -q -e .[test]",
                           "npm ci --no-audit --no-fund --loglevel=error"]
    assert run() == [] and run("test") == []  # npm there and its packages installed


def test_setup_installs_nothing_for_extras_already_installed(tmp_path):
    run, checkout = _checkout_with_stubs(tmp_path, npm=True)
    install = ["pip install -q --upgrade pip", "pip install -q -e .[test]"]
    assert run("test") == install + ["npm ci --no-audit --no-fund --loglevel=error"]
    assert run() == []  # scripts/dev.sh after scripts/test.sh
    assert run("test") == []  # and back
    assert run("bench") == ["pip install -q --upgrade pip", "pip install -q -e .[bench,test]"]  # beside test
    assert run("test", "bench") == [] and run() == []
    with (checkout / "pyproject.toml").open("a") as pyproject:
        pyproject.write("# changed\n")
    assert run() == ["pip install -q --upgrade pip", "pip install -q -e ."]  # anew
    assert run("test") == install


def test_the_suite_gets_none_of_the_callers_idp_or_django_variables(tmp_path):
    checkout = tmp_path / "checkout"
    for path in (checkout / "scripts", checkout / ".venv" / "bin"):
        path.mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "test.sh", checkout / "scripts" / "test.sh")
    (checkout / "scripts" / "services.sh").write_text(
        "services_start() { export IDP_TEST_DB_URL=db IDP_TEST_REDIS_URL=redis; }\nservices_stop() { :; }\n")
    for path, body in ((checkout / "scripts" / "setup.sh", "exit 0"), (checkout / ".venv" / "bin" / "python", "env"),
                       (checkout / ".venv" / "bin" / "ruff", "exit 0")):
        path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(0o755)
    done = subprocess.run(["bash", "scripts/test.sh"], cwd=checkout, capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ["PATH"], "DJANGO_SETTINGS_MODULE": "idp.settings.prod",
                               "IDP_SECRET_KEY": "from-a-production-shell", "OTHER": "kept",
                               "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0, done.stderr
    seen = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    assert "DJANGO_SETTINGS_MODULE" not in seen and "IDP_SECRET_KEY" not in seen
    assert "PYTHONDONTWRITEBYTECODE" not in seen  # compiled modules kept for every process (decision 0121)
    assert seen["IDP_TEST_DB_URL"] == "db" and seen["OTHER"] == "kept"
    # The suite runs twice: on PostgreSQL, then on SQLite without the tests about PostgreSQL.
    assert done.stdout.count("IDP_TEST_DB_URL=db") == 2 and done.stdout.count("IDP_TEST_DB=sqlite") == 1


@pytest.mark.parametrize("postgresql, sqlite, status", [(0, 0, 0), (1, 0, 1), (0, 1, 1), (0, 5, 0), (5, 5, 5)])
def test_the_suite_runs_on_postgresql_then_sqlite_and_fails_if_either_fails(tmp_path, postgresql, sqlite, status):
    """Both runs whatever the first's outcome, each timed, pytest's arguments passed to both. Exit 5 (no
    test selected) passes on SQLite, as when the arguments select only tests about PostgreSQL."""
    checkout = tmp_path / "checkout"
    for path in (checkout / "scripts", checkout / ".venv" / "bin"):
        path.mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "test.sh", checkout / "scripts" / "test.sh")
    (checkout / "scripts" / "services.sh").write_text("services_start() { :; }\nservices_stop() { :; }\n")
    python = ('echo "${IDP_TEST_DB:-postgresql}: $*"\n'
              f'[ "$IDP_TEST_DB" = sqlite ] && exit {sqlite}\nexit {postgresql}')
    for path, body in ((checkout / "scripts" / "setup.sh", "exit 0"), (checkout / ".venv" / "bin" / "python", python),
                       (checkout / ".venv" / "bin" / "ruff", "exit 0")):
        path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(0o755)
    done = subprocess.run(["bash", "scripts/test.sh", "-x", "tests/realms"], cwd=checkout, capture_output=True,
                          text=True, timeout=60, env={"PATH": os.environ["PATH"]})
    assert done.returncode == status, done.stdout + done.stderr
    runs = [line for line in done.stdout.splitlines() if line.startswith(("postgresql:", "sqlite:"))]
    assert runs == ["postgresql: -m pytest -x tests/realms", "sqlite: -m pytest -m not postgresql -x tests/realms"]
    assert re.search(rf"^PostgreSQL: exit {postgresql} in \d+ s$", done.stdout, re.M)
    assert re.search(rf"^SQLite: exit {0 if sqlite == 5 else sqlite} in \d+ s$", done.stdout, re.M)


def test_manage_py_commands_work_before_the_first_start(tmp_path):
    var = tmp_path / "var"  # a fresh checkout has no var directory yet
    env = base_env(DJANGO_SETTINGS_MODULE="idp.settings.dev", IDP_VAR_DIR=str(var), **UNGENERATED_LOCALE)
    done = subprocess.run([sys.executable, "manage.py", "migrate", "--verbosity", "0"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (var / "dev.sqlite3").is_file()
    listed = subprocess.run([sys.executable, "manage.py", "showmigrations", "realms"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0 and "[X] 0001_initial" in listed.stdout


@pytest.mark.parametrize("command, printed", [
    (["import_realm", "-"], "imported realm 'fresh'"),
    (["export_realm", "master"], '"realm": "master"'),
    (["bootstrap_admin", "user", "--username", "ops", "--password:env", "OPS_PASSWORD"], "'ops' created"),
])
def test_realm_commands_work_on_a_fresh_checkout_without_migrate_first(tmp_path, command, printed):
    # As Keycloak's import, export and bootstrap-admin: the schema is brought up to date first.
    env = base_env(DJANGO_SETTINGS_MODULE="idp.settings.dev", IDP_VAR_DIR=str(tmp_path / "var"),
                   OPS_PASSWORD="ops-pass-1234", **UNGENERATED_LOCALE)
    done = subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300, input='{"realm": "fresh", "enabled": true}')
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert printed in done.stdout


def test_start_dev_without_an_admin_warns_and_the_banner_names_the_demo_sign_in(tmp_path):
    from .test_modes import free_port, manage, stop

    http, mgmt = free_port(), free_port()
    env = base_env(DJANGO_SETTINGS_MODULE="idp.settings.dev", IDP_VAR_DIR=str(tmp_path), **UNGENERATED_LOCALE)
    proc = manage("start_dev", "--http-port", str(http), "--management-port", str(mgmt), env=env)
    lines = []
    try:
        for line in proc.stdout:  # until the banner's last line (the process exiting ends the loop)
            lines.append(line)
            if line.startswith("Health:"):
                break
    finally:
        stop(proc)
    output = "".join(lines)
    assert "WARNING: realm master has no administrator" in output
    assert "manage.py bootstrap_admin user --username NAME --password:env VARIABLE" in output
    base = f"http://localhost:{http}"
    assert (f"Demo client:    demo-app (public, PKCE S256), redirect URIs {base}/demo/callback, "
            f"http://127.0.0.1:{http}/demo/callback") in output
    assert f"Demo sign-in:   {base}/demo/ " in output


def test_start_lists_every_production_problem_at_once_one_line_each():
    from .test_modes import manage

    env = base_env(DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_DB_URL="mysql://db.internal/idp",
                   IDP_HTTP_PORT="eighty", IDP_HSTS_SECONDS="1y", IDP_TRUSTED_PROXIES="10.0.0.0/8,proxy.internal",
                   IDP_REDIS_URL=os.environ["IDP_TEST_REDIS_URL"])
    proc = manage("start", env=env)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "Traceback" not in out
    assert out.strip().splitlines() == [
        "CommandError: IDP_HOSTNAME is required in production mode (the public host name)",
        "IDP_SECRET_KEY is required in production mode (50+ random characters)",
        "IDP_DB_URL: unsupported scheme 'mysql', expected postgresql://",
        "IDP_HTTP_PORT: 'eighty' is not a whole number",
        "IDP_HSTS_SECONDS: '1y' is not a whole number",
        "IDP_TRUSTED_PROXIES: 'proxy.internal' is not an address or network",
    ]


def _wait_for_line(proc, text, deadline_s=60):
    import selectors
    import time

    seen = []
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if selector.select(timeout=1):
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            if text in line:
                return "".join(seen)
    raise AssertionError(f"{text!r} not printed: {''.join(seen)}")


def test_worker_and_beat_commands_run_celery_with_the_project_settings(tmp_path):
    from .test_modes import manage, stop

    env = base_env(DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_HOSTNAME="id.example.org",
                   IDP_SECRET_KEY="z" * 50, IDP_DB_URL=os.environ["IDP_TEST_DB_URL"],
                   IDP_REDIS_URL=os.environ["IDP_TEST_REDIS_URL"], IDP_VAR_DIR=str(tmp_path))
    worker = manage("worker", "--", "--pool", "solo", "--without-gossip", "--without-mingle", env=env)
    try:
        out = _wait_for_line(worker, "ready.")
        assert "webhooks.sweep" in out or "[tasks]" in out  # the project's tasks are registered
    finally:
        stop(worker)
    beat = manage("beat", env=env)
    try:
        out = _wait_for_line(beat, "beat: Starting")
    finally:
        stop(beat)
    assert "DatabaseScheduler" in out  # the schedule is django-celery-beat's tables (per LDAP provider)


def test_worker_refuses_dev_mode_and_a_broken_configuration(tmp_path):
    from .test_modes import manage

    dev = manage("worker", env=base_env(DJANGO_SETTINGS_MODULE="idp.settings.dev", IDP_VAR_DIR=str(tmp_path)))
    out, _ = dev.communicate(timeout=60)
    assert dev.returncode == 1 and out.strip() == (
        "CommandError: the worker is for production: in dev mode start_dev runs background work in-process")
    prod = manage("beat", env=base_env(DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_VAR_DIR=str(tmp_path)))
    out, _ = prod.communicate(timeout=60)
    assert prod.returncode == 1 and out.startswith("CommandError: IDP_HOSTNAME is required") and "Traceback" not in out


def test_dev_mode_webhooks_deliver_without_lock_errors_and_a_test_event_arrives_within_a_second(tmp_path):
    import threading
    import time

    import requests

    from tests.servers import Receiver

    from .test_modes import free_port, manage, stop, wait_for

    http, mgmt = free_port(), free_port()
    env = base_env(DJANGO_SETTINGS_MODULE="idp.settings.dev", IDP_VAR_DIR=str(tmp_path),
                   IDP_BOOTSTRAP_ADMIN_USERNAME="boot", IDP_BOOTSTRAP_ADMIN_PASSWORD="boot-pass-1")
    proc = manage("start_dev", "--http-port", str(http), "--management-port", str(mgmt), env=env)
    receiver = Receiver()
    try:
        base = f"http://127.0.0.1:{http}"
        wait_for(f"{base}/realms/master/.well-known/openid-configuration", proc=proc, deadline_s=90)
        token = requests.post(f"{base}/realms/master/protocol/openid-connect/token", timeout=10, data={
            "grant_type": "password", "client_id": "admin-cli", "username": "boot", "password": "boot-pass-1"}
        ).json()["access_token"]
        auth = {"Authorization": f"Bearer {token}"}
        endpoint = requests.post(f"{base}/admin/realms/demo/webhooks", json={"url": receiver.url()}, headers=auth,
                                 timeout=10).json()["id"]
        test_url = f"{base}/admin/realms/demo/webhooks/{endpoint}/test"
        # Eight at once: every request answers and every delivery arrives, nothing is locked.
        answers = []
        senders = [threading.Thread(target=lambda: answers.append(requests.post(test_url, headers=auth, timeout=30)))
                   for _ in range(8)]
        for thread in senders:
            thread.start()
        for thread in senders:
            thread.join()
        assert [a.status_code for a in answers] == [202] * 8
        deadline = time.monotonic() + 10
        while len(receiver.requests) < 8 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(receiver.requests) == 8
        # One more, on a quiet server: delivered within a second of being accepted.
        accepted = requests.post(test_url, headers=auth, timeout=10)
        sent_at = time.time()
        assert accepted.status_code == 202
        while len(receiver.requests) < 9 and time.time() - sent_at < 5:
            time.sleep(0.01)
        assert len(receiver.requests) == 9 and receiver.requests[-1]["at"] - sent_at < 1.0
    finally:
        stop(proc)
        receiver.close()
    out = proc.stdout.read()
    assert "database is locked" not in out and "Traceback" not in out, out
