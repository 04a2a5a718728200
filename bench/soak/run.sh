#!/usr/bin/env bash
# The soak of issue 34 (bench/soak/driver.py): HAProxy and two production nodes on a PostgreSQL
# and a Redis the driver starts itself; throughput of one node and of two, the peak, then
# DURATION seconds at 70 % of it with each process's RSS sampled every 10 s. Needs haproxy, hey,
# Debian's PostgreSQL and redis-server (scripts/setup.sh). The machine may be shared: quote the
# ratios of one run and the load average it prints.
# Usage: bench/soak/run.sh [--duration 600] [--measure 10]
set -euo pipefail
cd "$(dirname "$0")/../.."
exec .venv/bin/python -m bench.soak.driver "$@"
