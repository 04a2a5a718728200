"""Real Celery workers (``celery -A idp worker -B``) as subprocesses, for the end-to-end tests
and the benchmark."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def start_worker(db_name, workdir, settings_module="tests.webhooks.worker_settings", concurrency=8,
                 beat=True, extra_env=None):
    env = dict(os.environ, DJANGO_SETTINGS_MODULE=settings_module, IDP_WEBHOOK_TEST_DB_NAME=db_name,
               PYTHONPATH=str(REPO), **(extra_env or {}))
    cmd = [sys.executable, "-m", "celery", "-A", "idp", "worker", "--pool", "threads", "--concurrency", str(concurrency),
           "--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat",
           "--hostname", f"wh{time.monotonic_ns()}@%h"]
    if beat:
        cmd += ["-B", "--schedule", str(Path(workdir) / f"beat-{time.monotonic_ns()}")]
    log = open(Path(workdir) / f"worker-{time.monotonic_ns()}.log", "wb")
    # Own process group: a SIGKILL reaches the embedded beat process too.
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    proc.log_path = log.name
    return proc


def kill(proc, sig=signal.SIGKILL):
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def stop(proc):
    kill(proc, signal.SIGTERM)


def wait_until(predicate, timeout=20.0):
    """Poll ``predicate`` (bounded); True once it holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False
