"""Servers for the production tests, started by the tests themselves on loopback free ports:
a PostgreSQL primary with a synchronous streaming standby (Debian's PostgreSQL, as
scripts/services.sh runs it: as the ``postgres`` user when the tests run as root), Redis servers
one per site, and production nodes (``manage.py start``) with their log in a file."""
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import pytest

from tests.idp.test_modes import base_env, free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]
# The container image and podman's flags (test_container.py, test_compose.py). runc: crun refuses
# hosts whose cgroups are in hybrid mode. Limits named: podman's defaults are above what a container
# host may grant (setrlimit refused, EPERM). A storage of the tests' own: a host whose podman already
# holds a store of another driver ("database storage graph driver ... does not match") must not stop
# the build.
IMAGE = "localhost/idp:latest"
STORE = Path(os.environ.get("IDP_PODMAN_ROOT", str(Path.home() / ".cache" / "idp-podman")))
PODMAN = ["podman", "--runtime", "runc", "--storage-driver", "vfs", "--root", str(STORE / "storage"),
          "--runroot", str(STORE / "run")]
LIMITS = ["--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"]
PG_BIN = max(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]), default="")
STANDBY_NAME = "standby1"


def _as_postgres(*args, check=True):
    """Run a PostgreSQL program, as the postgres user when we are root (it refuses to run as root)."""
    run = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
    return subprocess.run([*run, "env", "-C", "/", "LC_ALL=C.UTF-8", "LANG=C.UTF-8", *args],
                          check=check, capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="session")
def image():
    """localhost/idp:latest built by deploy/build.sh, once per run. The debootstrap root file system
    is cached in IDP_ROOTFS_CACHE (default ~/.cache/idp-rootfs): it is Debian's packages of the day,
    the same whichever run made it; the image itself is built every run (cached while the build
    context is unchanged)."""
    for program in ("podman", "runc", "debootstrap"):
        assert shutil.which(program), f"{program} is not installed (scripts/test.sh's IDP_APT_PACKAGES)"
    cache = os.environ.get("IDP_ROOTFS_CACHE", str(Path.home() / ".cache" / "idp-rootfs"))
    built = subprocess.run(["deploy/build.sh", cache], cwd=ROOT,
                           env={**os.environ, "PODMAN_STORAGE": "vfs", "PODMAN_ROOT": str(STORE)},
                           capture_output=True, text=True, timeout=1700)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return IMAGE


class PostgresServer:
    def __init__(self, root, name):
        self.dir, self.port = root / name, free_port()
        self.data, self.log = self.dir / "data", self.dir / "log"
        self.dir.mkdir()
        if os.getuid() == 0:
            shutil.chown(self.dir, "postgres")

    @property
    def url(self):
        return f"postgresql://idp@127.0.0.1:{self.port}/postgres"

    def configure(self, **settings):
        # Appended last, so these win over what a base backup copied from the primary.
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.writelines(f"{name} = {value}\n" for name, value in settings.items())

    def start(self):
        _as_postgres(f"{PG_BIN}/pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "start")

    def stop(self):
        """Immediate: as a lost machine, no checkpoint, nothing more sent to the standby."""
        _as_postgres(f"{PG_BIN}/pg_ctl", "-D", str(self.data), "-m", "immediate", "stop", check=False)

    def promote(self):
        _as_postgres(f"{PG_BIN}/pg_ctl", "-D", str(self.data), "-w", "promote")

    def query(self, sql):
        with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
            return conn.execute(sql).fetchall()


@pytest.fixture(scope="module")
def pg_primary_with_standby():
    """(primary, standby): every commit on the primary waits until the standby has it
    (``synchronous_standby_names`` names the standby, ``synchronous_commit=on``). The standby
    names none itself, so that once promoted, with no standby of its own, its commits do not wait
    forever. Yields once the primary reports the standby as ``sync``."""
    root = Path(tempfile.mkdtemp(prefix="idp-sites-"))
    os.chmod(root, 0o755)  # the postgres user enters it
    primary, standby = PostgresServer(root, "primary"), PostgresServer(root, "standby")
    try:
        _as_postgres(f"{PG_BIN}/initdb", "-D", str(primary.data), "-U", "idp", "--auth=trust", "-E", "UTF8",
                     "--locale=C.UTF-8")
        primary.configure(listen_addresses="'127.0.0.1'", port=primary.port, unix_socket_directories=f"'{primary.dir}'",
                          fsync="off", full_page_writes="off", max_connections=100, wal_level="replica",
                          max_wal_senders=4, synchronous_commit="on",
                          synchronous_standby_names=f"'{STANDBY_NAME}'")
        primary.start()
        _as_postgres(f"{PG_BIN}/pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "idp",
                     "-D", str(standby.data), "-R", "-X", "stream")
        standby.configure(port=standby.port, unix_socket_directories=f"'{standby.dir}'",
                          cluster_name=f"'{STANDBY_NAME}'", synchronous_standby_names="''")
        standby.start()
        deadline = time.monotonic() + 20
        while primary.query("SELECT sync_state FROM pg_stat_replication") != [("sync",)]:
            assert time.monotonic() < deadline, "the standby never became synchronous"
            time.sleep(0.1)
        yield primary, standby
    finally:
        standby.stop()
        primary.stop()
        shutil.rmtree(root, ignore_errors=True)


class RedisServer:
    def __init__(self, root):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while subprocess.run(["redis-cli", "-p", str(self.port), "ping"], capture_output=True,
                             text=True).stdout.strip() != "PONG":
            assert time.monotonic() < deadline and self.proc.poll() is None, "redis-server did not start"
            time.sleep(0.05)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def redis_servers(tmp_path_factory):
    """``redis_servers()`` starts one more Redis server; all are stopped at the module's end."""
    started = []

    def start():
        started.append(RedisServer(tmp_path_factory.mktemp("redis")))
        return started[-1]

    yield start
    for server in started:
        server.kill()


class ProductionNode:
    """``manage.py start`` with one worker on loopback; its output goes to ``var_dir/node.log``."""

    def __init__(self, var_dir, **env):
        self.http, self.mgmt, self.var_dir, self.proc = free_port(), free_port(), Path(var_dir), None
        self.base = f"http://127.0.0.1:{self.http}"
        self.env = base_env(DJANGO_SETTINGS_MODULE="idp.settings.prod", IDP_VAR_DIR=str(var_dir), **env)

    def start(self, deadline_s=240):  # migrations on a fresh database are slow on a busy machine
        self.launch()
        self.wait_ready(deadline_s)

    def launch(self):
        """Start the process without waiting (nodes launched together take the migrations in turn)."""
        self.var_dir.mkdir(exist_ok=True)
        with open(self.var_dir / "node.log", "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-u", "manage.py", "start", "--http-port", str(self.http), "--management-port",
                 str(self.mgmt), "--bind", "127.0.0.1", "--workers", "1"],
                cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)

    def wait_ready(self, deadline_s=240):
        try:
            wait_for(f"http://127.0.0.1:{self.mgmt}/health/ready", deadline_s=deadline_s, proc=self.proc)
        except BaseException:
            raise AssertionError("node did not start:\n" + self.log()[-4000:]) from None

    def log(self):
        return (self.var_dir / "node.log").read_text(errors="replace")

    def processes(self):
        """The node's main process and the workers it forked (read from /proc)."""
        children = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                ppid = int(stat.read_text().rpartition(")")[2].split()[1])  # after the state
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(stat.parent.name))
        found, todo = [], [self.proc.pid]
        while todo:
            found.append(todo.pop())
            todo.extend(children.get(found[-1], []))
        return found

    def kill(self):
        """SIGKILL to the main process and its workers at once: a lost machine finishes nothing
        (killing the main process alone would leave its workers serving)."""
        if self.proc is not None and self.proc.poll() is None:
            for pid in self.processes():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.proc.wait()
        self.proc = None
