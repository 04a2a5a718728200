#!/usr/bin/env bash
# Long, coverage-guided fuzzing (atheris) of one target or of all, N seconds each, against the
# real services it starts (throw-away PostgreSQL and Redis, as scripts/test.sh). The test suite runs
# the same targets for a bounded time with hypothesis (tests/fuzz/test_fuzz.py).
# Usage: scripts/fuzz.sh TARGET|all [--seconds N]
# Targets: see TARGETS in tests/fuzz/targets.py. New corpus entries and any crash-* input land in
# .fuzz/TARGET/ (not committed); copy an input worth keeping into tests/fuzz/corpus/TARGET/.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: scripts/fuzz.sh TARGET|all [--seconds N]" >&2; exit 2; }
[ $# -ge 1 ] || usage
which=$1; shift
seconds=300
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) [ $# -ge 2 ] || usage; seconds=$2; shift 2 ;;
    *) usage ;;
  esac
done
export IDP_APT_PACKAGES="postgresql redis-server xmlsec1 libkrb5-dev libldap2-dev libsasl2-dev"
scripts/setup.sh test fuzz
names=$(.venv/bin/python -c 'from tests.fuzz.targets import TARGETS; print(" ".join(TARGETS))')
if [ "$which" != all ]; then
  [[ " $names " == *" $which "* ]] || { echo "fuzz: unknown target $which (one of: $names)" >&2; exit 2; }
  names=$which
fi
# shellcheck source=scripts/services.sh
source scripts/services.sh
trap services_stop EXIT
services_start
status=0
for name in $names; do
  out=.fuzz/$name
  mkdir -p "$out/corpus"
  echo "fuzz: $name for ${seconds}s"
  .venv/bin/python -m tests.fuzz.run "$name" "$out/corpus" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$out/" -print_final_stats=1 || { status=1; echo "fuzz: $name FOUND A CRASH, see $out/"; }
done
exit $status
