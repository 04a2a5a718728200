#!/usr/bin/env bash
# Fresh processes of the in-process grants, interleaved (interleave.py): their own PostgreSQL and
# Redis, the bench realm (bench/oidc/setup_realm.py). The instructions per request of fresh
# processes, which the machine's load cannot move, are bench/oidc/instructions.py's (ROUNDS=k:
# k processes, each with its own random hash seed unless PYTHONHASHSEED is set).
# Usage: bench/starts/in_process.sh [interleave.py arguments]
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_start bench.oidc.settings
$PY bench/oidc/setup_realm.py >/dev/null
$PY -m bench.starts.interleave "$@"
