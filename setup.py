"""The compiled part of the project: the ambassador's HTTP/1.1 call path, Cython (decision 0114),
built in place by ``pip install -e .`` (scripts/setup.sh). The interpreter's own flags (Debian's
-O2) and no -march: the build runs on any machine of its architecture. Each module is given the
hash of its source, which the ambassador checks at start (ambassador.compiled)."""
import sys
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ambassador.compiled import MODULES, source_hash  # noqa: E402

setup(ext_modules=cythonize(
    [Extension(f"ambassador.{name}", [f"ambassador/{name}.pyx"],
               define_macros=[("AMBASSADOR_SOURCE_HASH", f'"{source_hash(name)}"')]) for name in MODULES],
    build_dir="build/cython",
    # Types are declared (cdef), never taken from annotations, which Cython would enforce.
    compiler_directives={"language_level": 3, "annotation_typing": False}))
