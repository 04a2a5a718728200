"""Picks, of several builds of argon2-cffi-bindings, the one that hashes fastest on this machine
(docs/decisions/0056-argon2-build-by-measurement.md). Run by scripts/setup.sh.

Usage: argon2_fastest.py DIR [DIR ...], each DIR holding one wheel and named for its build
(avx2, avx512f). Prints the path of the wheel to install; each build's median on standard error.

Each build is unpacked and timed in a process of its own, in alternating rounds, so that a slow
moment of the machine falls on every build alike. A build whose hash differs from the known answer
(Argon2id at Keycloak's parameters) is refused, so a miscompiled library never gets installed."""
import os
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROUNDS, HASHES = 5, 20
# Argon2id, m = 7168 KiB, t = 5, p = 1, of b"password" with salt b"0123456789abcdef", as the
# published wheel (SSE2) computes it.
KNOWN = "75ab03b007cf3e00d918caa724a6426461c5d366eff6304abe9182809813a846"
PROBE = """
import sys, time
from _argon2_cffi_bindings import ffi, lib
out, times = ffi.new("uint8_t[]", 32), []
for _ in range(int(sys.argv[1]) + 1):  # the first one warms up, not counted
    started = time.process_time()
    code = lib.argon2_hash(5, 7168, 1, b"password", 8, b"0123456789abcdef", 16, out, 32, ffi.NULL, 0,
                           lib.Argon2_id, 0x13)
    times.append(time.process_time() - started)
    assert code == lib.ARGON2_OK, code
print(bytes(out).hex(), *times[1:])
"""


def main(dirs):
    with tempfile.TemporaryDirectory() as unpacked:
        builds = {}
        for directory in map(Path, dirs):
            (wheel,) = directory.glob("*.whl")
            target = Path(unpacked, directory.name)
            zipfile.ZipFile(wheel).extractall(target)
            builds[directory.name] = (wheel, target)
        times = {name: [] for name in builds}
        for _ in range(ROUNDS):
            for name, (_, target) in builds.items():
                env = dict(os.environ, PYTHONPATH=str(target))
                answer, *seconds = subprocess.run([sys.executable, "-c", PROBE, str(HASHES)], env=env, check=True,
                                                  capture_output=True, text=True).stdout.split()
                if answer != KNOWN:
                    sys.exit(f"argon2_fastest: the build {name} computes a wrong Argon2id hash")
                times[name] += map(float, seconds)
    medians = {name: statistics.median(values) for name, values in times.items()}
    fastest = min(medians, key=medians.get)
    print("setup: one Argon2id hash at Keycloak's parameters, built with " +
          ", ".join(f"{name}: {median * 1e3:.2f} ms" for name, median in medians.items()) +
          f"; keeping {fastest}", file=sys.stderr)
    print(builds[fastest][0])


if __name__ == "__main__":
    main(sys.argv[1:])
