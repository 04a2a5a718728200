#!/usr/bin/env bash
# Brokered sign-in benchmark (issue 30): what our server spends on a sign-in through an upstream
# OpenID Connect provider, against a local password sign-in without its Argon2id check.
# Production mode (manage.py start: Granian, PostgreSQL, Redis). Our server is pinned to core 0;
# the upstream provider (a second server of this project, realm "upstream") and the load
# generator to core 1, so the upstream's time never lands on our server's CPU count.
# Figures: flows/s and p50/p99 of whole flows (20 concurrent browsers) and our server's CPU per
# flow, counted from /proc over the measured flows only.
# ROUNDS alternate the two kinds of sign-in; the figures compared are each kind's median.
# Usage: bench/broker/run.sh   (env: DURATION=10 CONCURRENCY=20 ROUNDS=3)
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION=${DURATION:-10}
CONCURRENCY=${CONCURRENCY:-20}
ROUNDS=${ROUNDS:-3}
scripts/setup.sh test >/dev/null
# shellcheck source=scripts/services.sh
source scripts/services.sh
DOWN_PID=""; UP_PID=""
cleanup() { for p in $DOWN_PID $UP_PID; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; services_stop; }
trap cleanup EXIT
services_start >/dev/null

PORT=$(_free_port); MPORT=$(_free_port); UPORT=$(_free_port); UMPORT=$(_free_port)
export PYTHONPATH=$PWD DJANGO_SETTINGS_MODULE=bench.broker.settings IDP_DB_URL=$IDP_TEST_DB_URL \
  IDP_REDIS_URL=$IDP_TEST_REDIS_URL IDP_HOSTNAME=127.0.0.1 \
  IDP_SECRET_KEY=$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')
PY=.venv/bin/python
D=http://127.0.0.1:$PORT; U=http://127.0.0.1:$UPORT
$PY manage.py migrate -v0
DJANGO_SETTINGS_MODULE=bench.oidc.settings $PY bench/oidc/setup_realm.py >/dev/null
$PY bench/broker/setup.py "$D" "$U" >/dev/null
# One after the other: each start collects the static files into the same directory.
wait_for() {
  for _ in $(seq 240); do curl -fs "$1/realms/bench/.well-known/openid-configuration" >/dev/null 2>&1 && return; sleep 0.5; done
  echo "server at $1 did not start"; tail -n 20 "$SERVICES_DIR"/*.log; exit 1
}
IDP_BASE_URL=$D taskset -c 0 $PY manage.py start --bind 127.0.0.1 --http-port "$PORT" --management-port "$MPORT" \
  --management-bind 127.0.0.1 --workers 1 --threads 4 >"$SERVICES_DIR/down.log" 2>&1 & DOWN_PID=$!
wait_for "$D"
IDP_BASE_URL=$U taskset -c 1 $PY manage.py start --bind 127.0.0.1 --http-port "$UPORT" --management-port "$UMPORT" \
  --management-bind 127.0.0.1 --workers 1 --threads 4 >"$SERVICES_DIR/up.log" 2>&1 & UP_PID=$!
wait_for "$U"

echo "machine: $(lscpu | awk -F: '/Model name/{gsub(/^ +/,"",$2); print $2}'), $(nproc) cores; $($PY -V);" \
  "$(date -u +%FT%TZ); granian: 1 worker x 4 threads per server; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
cpu() { echo "$1" | sed -n 's/.*server_cpu_per_flow_us=\([0-9]*\).*/\1/p'; }
median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : int((v[NR/2]+v[NR/2+1])/2)}'; }
LOCAL=""; BROKERED=""
for round in $(seq "$ROUNDS"); do
  local_flows=$(taskset -c 1 $PY bench/broker/brokerflow.py "$D" "$DURATION" "$CONCURRENCY" "$DOWN_PID" password)
  echo "round $round, local password sign-in:  $local_flows"
  brokered=$(taskset -c 1 $PY bench/broker/brokerflow.py "$D" "$DURATION" "$CONCURRENCY" "$DOWN_PID")
  echo "round $round, brokered sign-in (OIDC): $brokered"
  LOCAL="$LOCAL $(cpu "$local_flows")"; BROKERED="$BROKERED $(cpu "$brokered")"
done
kill "$DOWN_PID" "$UP_PID"; wait "$DOWN_PID" "$UP_PID" 2>/dev/null || true; DOWN_PID=""; UP_PID=""
argon=$(taskset -c 0 $PY bench/broker/argon2_cost.py 30)
echo "one Argon2id check (core 0, in process): $argon"
awk -v l="$(echo "$LOCAL" | median)" -v b="$(echo "$BROKERED" | median)" -v a="$(echo "$argon" | sed 's/.*=//')" 'BEGIN {
  printf "server CPU per flow (medians of the rounds): local %d µs - Argon2id %d µs = %d µs; brokered %d µs; ratio %.2f (target <= 1.5)\n",
         l, a, l - a, b, b / (l - a) }'
