"""The container image (deploy/Containerfile), built by deploy/build.sh with Debian's podman from
Debian packages alone, and started as an operator runs it: configured by IDP_* variables only, as
a user other than root, on the test PostgreSQL and Redis (host network, loopback). Its Argon2 build
is chosen by the CPU the container runs on: shown with a /proc/cpuinfo that names no vector unit.

The image is built once per run by the ``image`` fixture (tests/production/conftest.py). Marked
postgresql: it runs once, in the PostgreSQL run of scripts/test.sh."""
import os
import subprocess
import uuid

import pytest
import requests

from tests.idp.test_modes import free_port, production_database, wait_for  # noqa: F401
from tests.production.conftest import LIMITS, PODMAN

pytestmark = [pytest.mark.postgresql, pytest.mark.timeout(1800)]


def podman_run(*args, name=None):
    return subprocess.run([*PODMAN, "run", "--rm", *LIMITS, *(["--name", name] if name else []), *args],
                          capture_output=True, text=True, timeout=600)


def test_the_image_runs_as_a_user_configured_by_environment(image, production_database, tmp_path):
    # Not root, and the Argon2 build follows the CPU: the vector build on this one (if the build
    # host had one), the published SSE2 build where the flags name none.
    here = podman_run("--entrypoint", "/opt/idp/.venv/bin/python", image,
                      "-c", "import os, realms.credentials.argon2_build as b;"
                      "print(os.getuid(), os.path.basename(b.chosen_build() or 'None').split('.')[0])")
    assert here.returncode == 0, here.stderr  # podman's own error, e.g. a missing network tool
    uid, unit = here.stdout.split()
    assert uid != "0"
    with open("/proc/cpuinfo") as cpuinfo:
        flags = next(line for line in cpuinfo if line.startswith("flags")).split()
    units = [u for u in ("avx2", "avx512f") if u in flags]  # the builds setup made in the image
    assert unit in units if units else unit == "None", unit
    plain = tmp_path / "cpuinfo"
    plain.write_text("processor\t: 0\nflags\t\t: fpu sse sse2\n")
    baseline = podman_run("-v", f"{plain}:/proc/cpuinfo:ro", "--entrypoint", "/opt/idp/.venv/bin/python", image,
                          "-c", "import realms.credentials.argon2_build as b, argon2;"
                          "h = argon2.PasswordHasher(); print(b.chosen_build(), h.verify(h.hash('x'), 'x'))")
    assert baseline.stdout.split() == ["None", "True"], baseline.stderr

    http, mgmt = free_port(), free_port()
    name = f"idp-test-{uuid.uuid4().hex[:8]}"
    env = {"IDP_HOSTNAME": "127.0.0.1", "IDP_BASE_URL": f"http://127.0.0.1:{http}", "IDP_SECRET_KEY": "c" * 50,
           "IDP_DB_URL": production_database, "IDP_REDIS_URL": os.environ["IDP_TEST_REDIS_URL"],
           "IDP_HTTP_PORT": str(http), "IDP_MANAGEMENT_PORT": str(mgmt), "IDP_BIND": "127.0.0.1",
           "IDP_MANAGEMENT_BIND": "127.0.0.1",  # the image's 0.0.0.0 would be every address of this host
           "IDP_WORKERS": "1", "IDP_BOOTSTRAP_ADMIN_USERNAME": "root", "IDP_BOOTSTRAP_ADMIN_PASSWORD": "root-pass-1"}
    started = subprocess.run([*PODMAN, "run", "-d", *LIMITS, "--name", name, "--network", "host",
                              *[a for k, v in env.items() for a in ("-e", f"{k}={v}")], image],
                             capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    try:
        try:
            ready = wait_for(f"http://127.0.0.1:{mgmt}/health/ready", deadline_s=180)
        except AssertionError:
            logs = subprocess.run([*PODMAN, "logs", name], capture_output=True, text=True, timeout=60)
            raise AssertionError("not ready:\n" + (logs.stdout + logs.stderr)[-4000:]) from None
        assert ready.status_code == 200, ready.text
        token = requests.post(f"http://127.0.0.1:{http}/realms/master/protocol/openid-connect/token", timeout=30,
                              data={"grant_type": "password", "client_id": "admin-cli", "username": "root",
                                    "password": "root-pass-1"})
        assert token.status_code == 200 and token.json()["token_type"] == "Bearer", token.text
        wrong = requests.post(f"http://127.0.0.1:{http}/realms/master/protocol/openid-connect/token", timeout=30,
                              data={"grant_type": "password", "client_id": "admin-cli", "username": "root",
                                    "password": "wrong"})
        assert wrong.status_code in (400, 401) and wrong.json()["error"] == "invalid_grant", wrong.text
        # A setting the image cannot honour stops it with lines that name them, no traceback.
        bad = podman_run("-e", "IDP_DB_URL=postgresql://x@127.0.0.1:1/x", "-e", "IDP_REDIS_URL=redis://127.0.0.1:1",
                         "-e", "IDP_HOSTNAME=h", "-e", "IDP_SECRET_KEY=" + "c" * 50, image)
        assert bad.returncode != 0 and "IDP_REDIS_URL: cannot connect to Redis" in bad.stderr, bad.stderr
        assert "Traceback" not in bad.stdout + bad.stderr
    finally:
        subprocess.run([*PODMAN, "rm", "-f", "-t", "10", name], capture_output=True, timeout=120)
