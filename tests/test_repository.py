"""The repository is the whole product: the third-party data the tests read lives in tests/data,
each file named with its source and licence in tests/data/README.md, and no test, benchmark or
script reaches above the checkout for a file."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
# Path(__file__).resolve().parents[N] followed by any number of .parent
UP = re.compile(r"Path\(__file__\)\.resolve\(\)\.parents\[(\d+)\]((?:\.parent\b)*)")


def test_every_data_file_is_named_in_the_data_readme():
    readme = (DATA / "README.md").read_text()
    files = [p for p in DATA.rglob("*") if p.is_file() and p.name != "README.md"]
    assert files
    for path in files:
        assert f"`{path.name}`" in readme or f"{path.relative_to(DATA)}:" in readme, path


def _sources():
    """The Python files of the tests, benchmarks and scripts (this one's climbs are examples)."""
    for top in ("tests", "bench", "scripts"):
        yield from (p for p in (ROOT / top).rglob("*.py")
                    if "node_modules" not in p.parts and p != Path(__file__).resolve())


def _escapes(path, source):
    """The ``Path(__file__)`` climbs in ``source`` that end above the repository's root."""
    root = len(path.relative_to(ROOT).parts) - 1  # the root is parents[root]
    return [m.group(0) for m in UP.finditer(source) if int(m.group(1)) + m.group(2).count(".parent") > root]


@pytest.mark.parametrize("source, escapes", [
    ('Path(__file__).resolve().parents[1] / "data"', False),
    ('Path(__file__).resolve().parents[2] / "docs"', False),
    ('Path(__file__).resolve().parents[1].parent / "docs"', False),
    ('Path(__file__).resolve().parents[3] / "elsewhere"', True),
    ('Path(__file__).resolve().parents[2].parent / "elsewhere"', True),
])
def test_the_check_tells_a_climb_out_of_the_checkout(source, escapes):
    assert bool(_escapes(ROOT / "tests" / "webhooks" / "vectors.py", source)) is escapes


def test_nothing_reads_above_the_checkout():
    found = {str(p.relative_to(ROOT)): e for p in _sources() if (e := _escapes(p, p.read_text(encoding="utf-8")))}
    assert found == {}
