#!/usr/bin/env bash
# Memory of a process serving COUNT realms in turn, against one realm, in process
# (bench/realms/memory.py): its own PostgreSQL and Redis, COUNT realms of bench/realms/setup.py.
# Usage: bench/realms/memory.sh COUNT [--trace]
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/setup.sh test >/dev/null
# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_start idp.settings.prod
echo "$(date -u +%FT%TZ); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
$PY bench/realms/setup.py "$1" >/dev/null
for count in 1 "$1"; do taskset -c 0 "$PY" -W ignore bench/realms/memory.py "$count" "${@:2}"; done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
