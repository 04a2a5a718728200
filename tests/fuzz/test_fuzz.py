"""Every fuzz target for a bounded time: its seeds, then a fixed, derandomized series of mutants
(the same inputs on every run, so a failure here is reproducible and not flaky). Longer,
coverage-guided runs: ``scripts/fuzz.sh TARGET|all --seconds N``."""
import os

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from .strategies import inputs
from .targets import TARGETS, run_one

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "60"))  # more for a deeper run by hand


def _fuzz(target):
    state = target.setup()
    for seed in target.seeds():
        run_one(target, state, seed)

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              phases=(Phase.generate, Phase.shrink), suppress_health_check=list(HealthCheck))
    @given(inputs(target))
    def fuzz(data):
        run_one(target, state, data)

    fuzz()


@pytest.mark.parametrize("name", sorted(n for n, t in TARGETS.items() if t.db))
def test_fuzz_target_with_database(name, db):
    _fuzz(TARGETS[name])


@pytest.mark.parametrize("name", sorted(n for n, t in TARGETS.items() if not t.db))
def test_fuzz_target(name):
    _fuzz(TARGETS[name])
