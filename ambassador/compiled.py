"""The ambassador's HTTP/1.1 call path is Cython (decision 0114): its modules exist only as ``.pyx``
sources, compiled in place by ``pip install -e .`` (scripts/setup.sh, ``setup.py``). Each build
carries the hash of the source it was made from, and the ambassador refuses to start on a module
that is missing, not compiled, or built from other source: Python would otherwise import a stale
build without a word."""
from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
from pathlib import Path

from .errors import AmbassadorError

MODULES = ("corked", "exchange", "request", "telemetry", "upstream", "downstream", "proxy")
HERE = Path(__file__).resolve().parent


class BuildError(AmbassadorError):
    """A compiled module of the call path cannot be used."""


def source_hash(name: str, directory: Path = HERE) -> str:
    """The hash of a module's source: its ``.pyx``, and its ``.pxd`` when it has one."""
    digest = hashlib.sha256()
    for suffix in (".pxd", ".pyx"):
        path = directory / (name + suffix)
        if path.exists():
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def check(package: str = "ambassador", directory: Path = HERE, modules=MODULES) -> None:
    """Raises BuildError, one line naming scripts/setup.sh, for the first module that is not the
    build of its source."""
    for name in modules:
        spec = importlib.util.find_spec(f"{package}.{name}")
        if spec is None:
            problem = "is missing"
        elif not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
            problem = "is not compiled"
        elif getattr(importlib.import_module(spec.name), "SOURCE_HASH", None) != source_hash(name, directory):
            problem = f"was built from another {name}.pyx"
        else:
            continue
        raise BuildError(f"ambassador: the module {package}.{name} {problem}: run scripts/setup.sh to build it")
