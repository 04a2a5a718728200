"""The Argon2 C library that scripts/setup.sh builds on this machine (decisions 0046 and 0056)."""
import importlib.metadata
import platform
import subprocess
import sys
import zipfile
from pathlib import Path

import _argon2_cffi_bindings
import pytest

CHOOSER = Path(__file__).resolve().parents[2] / "scripts" / "argon2_fastest.py"


def test_argon2_is_built_here_for_avx2_where_the_cpu_has_it():
    # The published wheels carry SSE2 code only: twice the CPU per check. Elsewhere the wheel stays.
    with open("/proc/cpuinfo") as cpuinfo:
        avx2 = platform.machine() == "x86_64" and "avx2" in cpuinfo.read().split()
    tags = [line.split(": ", 1)[1] for line in importlib.metadata.distribution("argon2-cffi-bindings")
            .read_text("WHEEL").splitlines() if line.startswith("Tag: ")]
    built_here = all(tag.endswith("-linux_x86_64") for tag in tags)
    assert tags and built_here == avx2, tags


# Stand-ins for builds: the installed library, behind a lib that first burns CPU or then spoils
# the hash it wrote.
WRAPPER = """
import time
from ._ffi import ffi, lib as _lib


class _Build:
    def __getattr__(self, name):
        return getattr(_lib, name)

    def argon2_hash(self, *args):
        until = time.process_time() + {burn}
        while time.process_time() < until:
            pass
        code = _lib.argon2_hash(*args)
        args[7][0] ^= {spoil}
        return code


lib = _Build()
"""


def build(tmp_path, name, burn=0.0, spoil=0):
    library = next(Path(_argon2_cffi_bindings.__file__).parent.glob("_ffi*.so"))
    (tmp_path / name).mkdir()
    with zipfile.ZipFile(tmp_path / name / "argon2_cffi_bindings-0-cp310-abi3-linux_x86_64.whl", "w") as wheel:
        wheel.writestr("_argon2_cffi_bindings/__init__.py", WRAPPER.format(burn=burn, spoil=spoil))
        wheel.write(library, "_argon2_cffi_bindings/" + library.name)
    return tmp_path / name


def choose(*builds):
    return subprocess.run([sys.executable, str(CHOOSER), *map(str, builds)], capture_output=True, text=True)


def test_setup_keeps_the_build_that_hashes_fastest(tmp_path):
    slow, fast = build(tmp_path, "slow", burn=0.004), build(tmp_path, "fast")
    for order in ((slow, fast), (fast, slow)):
        answer = choose(*order)
        assert answer.returncode == 0, answer.stderr
        assert answer.stdout.strip() == str(next(fast.glob("*.whl")))
        assert answer.stderr.rstrip().endswith("; keeping fast")


def test_setup_refuses_a_build_that_computes_another_hash(tmp_path):
    answer = choose(build(tmp_path, "right"), build(tmp_path, "wrong", spoil=1))
    assert answer.returncode == 1
    assert answer.stdout == ""
    assert answer.stderr.strip() == "argon2_fastest: the build wrong computes a wrong Argon2id hash"


@pytest.mark.parametrize("spoil", [0, 1])
def test_a_single_build_is_still_checked(tmp_path, spoil):
    answer = choose(build(tmp_path, "only", spoil=spoil))
    assert (answer.returncode == 0) == (not spoil), answer.stderr
