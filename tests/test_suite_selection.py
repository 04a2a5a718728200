"""The SQLite run leaves out the tests of tests/conftest.py's RUN_ONCE paths that request no
database, and nothing else (decision 0121); the PostgreSQL run leaves out nothing."""
import collections
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Listed: the repository checks (no database) and the bootstrap tests (django_db). Not listed: the
# error bases' tests (no database) and the smoke test (django_db, marked postgresql). This module is
# listed itself: it collects for each database on its own, the same on either run.
PATHS = ["tests/test_repository.py", "tests/idp/test_bootstrap.py", "tests/realms/test_error_bases.py",
         "tests/test_smoke_settings.py"]


def collect(database):
    """(tests collected per module, pytest's output)."""
    env = {k: v for k, v in os.environ.items() if k != "IDP_TEST_DB"}
    marker = []
    if database == "sqlite":
        env["IDP_TEST_DB"], marker = "sqlite", ["-m", "not postgresql"]
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *marker,
                           *PATHS], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return collections.Counter(line.split("::")[0] for line in done.stdout.splitlines() if "::" in line), done.stdout


def test_only_the_listed_tests_without_a_database_are_left_out_of_the_sqlite_run():
    everything, out = collect("postgresql")
    assert set(everything) == set(PATHS), out
    sqlite, out = collect("sqlite")
    kept = ("tests/idp/test_bootstrap.py", "tests/realms/test_error_bases.py")
    assert sqlite == {path: everything[path] for path in kept}, out
    # Counted as deselected (the repository checks, and the smoke test by its marker), never as skipped.
    left_out = everything["tests/test_repository.py"] + everything["tests/test_smoke_settings.py"]
    assert re.search(rf"\({left_out} deselected\)", out) and "skipped" not in out, out
