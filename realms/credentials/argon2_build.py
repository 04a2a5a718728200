"""Which build of Argon2's C library this process loads (decision 0058).

argon2-cffi's C library is the extension module ``_argon2_cffi_bindings._ffi``. The venv keeps the
published build installed: SSE2 code, which every x86-64 CPU runs. Beside it, in the venv's
``argon2`` directory, ``scripts/setup.sh`` puts builds for the vector units of the machine it ran
on (``avx2.abi3.so``, ``avx512f.abi3.so``) and ``order``, the units in the order to prefer them.
Importing this module puts a finder first on ``sys.meta_path`` that answers the import of
``_argon2_cffi_bindings._ffi`` with the first build in that order whose unit the running CPU has,
and leaves the import to the published build where there is none. A ``.pth`` file setup writes
imports this module at every start of the venv's Python, so the choice is made before anything
can import argon2, whatever the process (servers, workers, commands, tests, benchmarks)."""
import os
import sys

MODULE = "_argon2_cffi_bindings._ffi"
BUILDS = os.path.join(sys.prefix, "argon2")


def cpu_flags():
    """The CPU features the kernel lets processes use: the first ``flags`` line of /proc/cpuinfo.
    (The kernel leaves AVX-512 out where it does not save its registers, as in some VMs, which
    the CPU's own cpuid would not say.) Empty where there is no such file."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return set(line.partition(":")[2].split())
    except OSError:
        pass
    return set()


def choose(order, flags):
    """The first unit of ``order`` that ``flags`` name; None for the published build."""
    return next((unit for unit in order if unit in flags), None)


def chosen_build():
    """The file of the build this process loads, or None for the published one."""
    try:
        with open(os.path.join(BUILDS, "order")) as order:
            units = order.read().split()
    except FileNotFoundError:
        return None
    unit = choose(units, cpu_flags())
    return unit and next(os.path.join(BUILDS, name) for name in os.listdir(BUILDS) if name.startswith(unit + "."))


class _Finder:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != MODULE or not (build := chosen_build()):
            return None
        # Imported here, and pathlib nowhere: this module is imported at every start of the venv's
        # Python, which loads neither (importlib.util and pathlib would add 3 and 15 ms to it).
        from importlib.util import spec_from_file_location
        return spec_from_file_location(name, build)


sys.meta_path.insert(0, _Finder)
