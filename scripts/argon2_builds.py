"""Installs builds of Argon2's C library (argon2-cffi-bindings) for the CPU's vector units beside
the published one, with the order in which a process prefers them (realms/credentials/argon2_build.py,
docs/decisions/0058-argon2-build-chosen-at-run-time.md). Run by scripts/setup.sh.

Usage: argon2_builds.py TARGET DIR [DIR ...], each DIR holding one wheel and named for the vector
unit it was built for (avx2, avx512f), the default first. Writes TARGET/<unit>.<suffix>, each
wheel's library, and TARGET/order, the units in order of preference; each build's median on
standard error.

Each build is timed in a process of its own, in alternating rounds, so that a slow moment of the
machine falls on every build alike. Another build goes before the default only if it hashes in
under nine tenths of the default's time: builds that hash alike keep the default, rather than
swap places from one setup to the next on noise. A build whose hash differs from the known
answer (Argon2id at Keycloak's parameters) is refused, so a miscompiled library never gets
installed."""
import shutil
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROUNDS, HASHES = 5, 20
MARGIN = 0.9
# Argon2id, m = 7168 KiB, t = 5, p = 1, of b"password" with salt b"0123456789abcdef", as the
# published wheel (SSE2) computes it.
KNOWN = "75ab03b007cf3e00d918caa724a6426461c5d366eff6304abe9182809813a846"
# The build is loaded from its file, past any finder (realms/credentials/argon2_build.py's among them).
PROBE = """
import importlib.util, sys, time
spec = importlib.util.spec_from_file_location("_argon2_cffi_bindings._ffi", sys.argv[1])
build = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build)
ffi, lib = build.ffi, build.lib
out, times = ffi.new("uint8_t[]", 32), []
for _ in range(int(sys.argv[2]) + 1):  # the first one warms up, not counted
    started = time.process_time()
    code = lib.argon2_hash(5, 7168, 1, b"password", 8, b"0123456789abcdef", 16, out, 32, ffi.NULL, 0,
                           lib.Argon2_id, 0x13)
    times.append(time.process_time() - started)
    assert code == lib.ARGON2_OK, code
print(bytes(out).hex(), *times[1:])
"""


def order(medians, default):
    """The units fastest first, where any but the default counts as if a tenth slower."""
    return sorted(medians, key=lambda unit: medians[unit] / (1 if unit == default else MARGIN))


def main(target, dirs):
    target = Path(target)
    with tempfile.TemporaryDirectory() as unpacked:
        builds = {}
        for directory in map(Path, dirs):
            with zipfile.ZipFile(next(directory.glob("*.whl"))) as wheel:
                (member,) = (name for name in wheel.namelist() if name.startswith("_argon2_cffi_bindings/_ffi."))
                library = Path(unpacked, directory.name + member.removeprefix("_argon2_cffi_bindings/_ffi"))
                library.write_bytes(wheel.read(member))
            builds[directory.name] = library
        times = {unit: [] for unit in builds}
        for _ in range(ROUNDS):
            for unit, library in builds.items():
                answer, *seconds = subprocess.run([sys.executable, "-c", PROBE, str(library), str(HASHES)],
                                                  check=True, capture_output=True, text=True).stdout.split()
                if answer != KNOWN:
                    sys.exit(f"argon2_builds: the build {unit} computes a wrong Argon2id hash")
                times[unit] += map(float, seconds)
        medians = {unit: statistics.median(values) for unit, values in times.items()}
        preferred = order(medians, default=next(iter(builds)))
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for library in builds.values():
            shutil.copy(library, target)
    (target / "order").write_text(" ".join(preferred) + "\n")
    print("setup: one Argon2id hash at Keycloak's parameters, built for " +
          ", ".join(f"{unit}: {median * 1e3:.2f} ms" for unit, median in medians.items()) +
          f"; in order of preference: {', '.join(preferred)}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
