"""The builds of Argon2's C library: the published one installed, the vector builds
scripts/setup.sh puts beside it, and the one each process loads (decision 0058)."""
import importlib.metadata
import importlib.util
import itertools
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from argon2.low_level import Type, core, ffi, hash_secret_raw, lib

from realms.credentials import argon2_build
from realms.credentials.hashers import argon2_raw

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "argon2_builds.py"
# Argon2id at Keycloak's parameters as the published wheel computes it (setup checks the same).
KEYCLOAK = {"time_cost": 5, "memory_cost": 7168, "parallelism": 1, "hash_len": 32, "type": Type.ID}
KNOWN = "75ab03b007cf3e00d918caa724a6426461c5d366eff6304abe9182809813a846"
PUBLISHED = next(Path(importlib.util.find_spec("_argon2_cffi_bindings").origin).parent.glob("_ffi.*"))


def test_the_loaded_build_computes_known_argon2id_hashes():
    assert hash_secret_raw(b"password", b"0123456789abcdef", **KEYCLOAK).hex() == KNOWN
    assert argon2_raw(b"password", b"0123456789abcdef", **KEYCLOAK).hex() == KNOWN
    # RFC 9106, 5.3: Argon2id with a secret, associated data and four lanes.
    out = ffi.new("uint8_t[]", 32)
    buffers = [ffi.new("uint8_t[]", value) for value in (b"\1" * 32, b"\2" * 16, b"\3" * 8, b"\4" * 12)]
    context = ffi.new("argon2_context *", {
        "out": out, "outlen": 32, "pwd": buffers[0], "pwdlen": 32, "salt": buffers[1], "saltlen": 16,
        "secret": buffers[2], "secretlen": 8, "ad": buffers[3], "adlen": 12, "t_cost": 3, "m_cost": 32,
        "lanes": 4, "threads": 4, "version": 0x13, "allocate_cbk": ffi.NULL, "free_cbk": ffi.NULL,
        "flags": lib.ARGON2_DEFAULT_FLAGS})
    assert core(context, Type.ID.value) == lib.ARGON2_OK
    assert bytes(out).hex() == "0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659"


def test_the_installed_build_is_the_published_portable_one():
    # A build of this machine's (tagged linux_x86_64) installed as the package would be loaded
    # wherever no vector build is chosen, and stop where the CPU lacks its unit.
    tags = [line.split(": ", 1)[1] for line in importlib.metadata.distribution("argon2-cffi-bindings")
            .read_text("WHEEL").splitlines() if line.startswith("Tag: ")]
    assert tags and not any("-linux_" in tag for tag in tags), tags


@pytest.mark.parametrize("order", [["avx512f", "avx2"], ["avx2", "avx512f"], ["avx2"], []])
def test_the_chooser_never_picks_a_unit_the_cpu_lacks(order):
    units = ["avx2", "avx512f", "sse2"]
    for flags in (set(chosen) for size in range(len(units) + 1) for chosen in itertools.combinations(units, size)):
        available = [unit for unit in order if unit in flags]
        assert argon2_build.choose(order, flags) == (available[0] if available else None), (order, flags)


# Run by the venv's Python: the chooser told the CPU's flags (and where the builds are, if given),
# then argon2 imported as the project does; prints the file loaded and the hash it computes.
LOAD = """
import sys
from realms.credentials import argon2_build
argon2_build.cpu_flags = lambda: set(sys.argv[1].split())
if len(sys.argv) > 2:
    argon2_build.BUILDS = sys.argv[2]
from argon2.low_level import Type, hash_secret_raw
print(sys.modules["_argon2_cffi_bindings._ffi"].__file__)
print(hash_secret_raw(b"password", b"0123456789abcdef", time_cost=5, memory_cost=7168, parallelism=1,
                      hash_len=32, type=Type.ID).hex())
"""


def load(flags, builds=()):
    answer = subprocess.run([sys.executable, "-c", LOAD, " ".join(flags), *map(str, builds)],
                            capture_output=True, text=True)
    assert answer.returncode == 0, answer.stderr
    loaded, digest = answer.stdout.split()
    assert digest == KNOWN
    return Path(loaded)


def test_a_process_of_the_venv_loads_the_build_chosen_for_its_cpu():
    # No import of realms.credentials.argon2_build here: the venv's .pth file makes it at start.
    answer = subprocess.run([sys.executable, "-c", "import sys, argon2.low_level; "
                             "print(sys.modules['_argon2_cffi_bindings._ffi'].__file__)"],
                            capture_output=True, text=True, check=True)
    assert Path(answer.stdout.strip()) == Path(argon2_build.chosen_build() or PUBLISHED)


@pytest.mark.parametrize("lacking", [{"avx512f"}, {"avx512f", "avx2"}])
def test_a_cpu_without_a_unit_gets_the_next_build_down_with_the_venvs_builds(lacking):
    # This machine's own builds (none where it has no AVX2), on a CPU said to lack some units.
    flags = argon2_build.cpu_flags() - lacking
    builds = Path(argon2_build.BUILDS)
    order = (builds / "order").read_text().split() if builds.exists() else []
    unit = argon2_build.choose(order, flags)
    assert load(flags) == (next(builds.glob(f"{unit}.*")) if unit else PUBLISHED)
    assert unit not in lacking


def test_a_process_loads_the_first_build_in_order_its_cpu_has(tmp_path):
    # Stand-ins that any x86-64 CPU runs: copies of the published build under the vector units'
    # names, so the file loaded tells which was chosen.
    for unit in ("avx2", "avx512f"):
        (tmp_path / (unit + PUBLISHED.name.removeprefix("_ffi"))).write_bytes(PUBLISHED.read_bytes())
    (tmp_path / "order").write_text("avx512f avx2\n")
    assert load({"sse2", "avx2", "avx512f"}, [tmp_path]).name.startswith("avx512f.")
    assert load({"sse2", "avx2"}, [tmp_path]).name.startswith("avx2.")
    assert load({"sse2"}, [tmp_path]) == PUBLISHED
    (tmp_path / "order").write_text("avx2 avx512f\n")
    assert load({"sse2", "avx2", "avx512f"}, [tmp_path]).name.startswith("avx2.")


# Stand-ins for builds that setup measures: the published library, behind a lib that first burns
# CPU or then spoils the hash it wrote.
STAND_IN = """
import importlib.util
import time

_spec = importlib.util.spec_from_file_location(__name__, {library!r})
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)
ffi = _build.ffi


class _Lib:
    def __getattr__(self, name):
        return getattr(_build.lib, name)

    def argon2_hash(self, *args):
        until = time.process_time() + {burn}
        while time.process_time() < until:
            pass
        code = _build.lib.argon2_hash(*args)
        args[7][0] ^= {spoil}
        return code


lib = _Lib()
"""


def build(tmp_path, unit, burn=0.0, spoil=0):
    (tmp_path / unit).mkdir()
    with zipfile.ZipFile(tmp_path / unit / "argon2_cffi_bindings-0-cp310-abi3-linux_x86_64.whl", "w") as wheel:
        wheel.writestr("_argon2_cffi_bindings/_ffi.py", STAND_IN.format(library=str(PUBLISHED), burn=burn,
                                                                         spoil=spoil))
    return tmp_path / unit


def install(target, *builds):
    return subprocess.run([sys.executable, str(SCRIPT), str(target), *map(str, builds)], capture_output=True,
                          text=True)


@pytest.mark.parametrize("slow", ["avx2", "avx512f"])
def test_setup_installs_the_builds_the_faster_first(tmp_path, slow):
    builds = [build(tmp_path, unit, burn=0.01 if unit == slow else 0.0) for unit in ("avx2", "avx512f")]
    answer = install(tmp_path / "target", *builds)
    assert answer.returncode == 0, answer.stderr
    preferred = ["avx512f", "avx2"] if slow == "avx2" else ["avx2", "avx512f"]
    assert (tmp_path / "target" / "order").read_text() == " ".join(preferred) + "\n"
    assert sorted(path.name for path in (tmp_path / "target").iterdir()) == ["avx2.py", "avx512f.py", "order"]
    assert answer.stderr.rstrip().endswith("; in order of preference: " + ", ".join(preferred))


def test_another_build_goes_before_the_default_only_if_a_tenth_faster():
    spec = importlib.util.spec_from_file_location("argon2_builds", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.order({"avx2": 5.0, "avx512f": 4.6}, default="avx2") == ["avx2", "avx512f"]
    assert script.order({"avx2": 5.0, "avx512f": 5.0}, default="avx2") == ["avx2", "avx512f"]
    assert script.order({"avx512f": 5.0, "avx2": 5.0}, default="avx2") == ["avx2", "avx512f"]
    assert script.order({"avx2": 5.0, "avx512f": 4.4}, default="avx2") == ["avx512f", "avx2"]
    assert script.order({"avx2": 4.4, "avx512f": 5.0}, default="avx2") == ["avx2", "avx512f"]


def test_setup_refuses_a_build_that_computes_another_hash(tmp_path):
    answer = install(tmp_path / "target", build(tmp_path, "avx2"), build(tmp_path, "avx512f", spoil=1))
    assert answer.returncode == 1
    assert answer.stderr.strip() == "argon2_builds: the build avx512f computes a wrong Argon2id hash"
    assert not (tmp_path / "target").exists()


@pytest.mark.parametrize("spoil", [0, 1])
def test_a_single_build_is_still_checked(tmp_path, spoil):
    answer = install(tmp_path / "target", build(tmp_path, "avx2", spoil=spoil))
    assert (answer.returncode == 0) == (not spoil), answer.stderr
    assert (tmp_path / "target" / "order").exists() == (not spoil)
