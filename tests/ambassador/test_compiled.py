"""The call path runs compiled, and only as the build of its own source (decision 0114): the
ambassador refuses a module that is missing, not compiled or built from another source, with one
line naming scripts/setup.sh."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ambassador import compiled

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "ambassador"


def test_the_call_path_is_the_build_of_its_source():
    compiled.check()
    for name in compiled.MODULES:
        spec = importlib.util.find_spec(f"ambassador.{name}")
        assert isinstance(spec.loader, importlib.machinery.ExtensionFileLoader), name
        assert importlib.import_module(spec.name).SOURCE_HASH == compiled.source_hash(name)
        assert not (PACKAGE / f"{name}.py").exists()  # no interpreted twin


def test_check_refuses_a_missing_an_uncompiled_and_a_stale_module(tmp_path, monkeypatch):
    pkg = tmp_path / "builtcopy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for source in ("corked.pyx", "corked.pxd"):
        shutil.copy(PACKAGE / source, pkg / source)
    shutil.copy(importlib.util.find_spec("ambassador.corked").origin, pkg)  # the build, under another package
    (pkg / "plain.py").write_text("SOURCE_HASH = None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        compiled.check("builtcopy", pkg, ("corked",))
        with (pkg / "corked.pyx").open("a") as f:
            f.write("\n# changed after the build\n")
        for name, problem in (("corked", "was built from another corked.pyx"), ("plain", "is not compiled"),
                              ("absent", "is missing")):
            with pytest.raises(compiled.BuildError) as e:
                compiled.check("builtcopy", pkg, (name,))
            assert str(e.value) == f"ambassador: the module builtcopy.{name} {problem}: run scripts/setup.sh to build it"
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] == "builtcopy"]:
            del sys.modules[name]


def test_the_ambassador_refuses_to_start_without_its_build(tmp_path):
    """A checkout whose call path was never built: one line, naming scripts/setup.sh, and no listener."""
    copy = tmp_path / "ambassador"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    cfg = tmp_path / "amb.yaml"
    cfg.write_text(yaml.safe_dump({"listener": {"port": 0}, "upstreams": {"a": {"instances": ["127.0.0.1:1"]}},
                                   "routes": [{"upstream": "a"}]}))
    r = subprocess.run([sys.executable, "-m", "ambassador", "--config", str(cfg)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        "ambassador: the module ambassador.corked is missing: run scripts/setup.sh to build it"]
