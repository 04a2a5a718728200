#!/usr/bin/env bash
# The cost of the feature stateless (two sites: the shared caches in PostgreSQL, decision 0094)
# against the one-site default (the caches in Redis), in one run: two production nodes on the
# same PostgreSQL, Redis and realm, one with each configuration, both pinned to core 0, loaded in
# turn by hey on core 1 (50 clients), ROUNDS rounds alternating which goes first. Per scenario and
# node: req/s, and the CPU per request of the node, PostgreSQL and Redis (from /proc). Quote the
# medians and the ratio stateless / redis: the machine may be shared, so only the ratio holds.
# Usage: bench/oidc/stateless.sh   (env: DURATION=5 ROUNDS=3)
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
PY=.venv/bin/python
# shellcheck source=scripts/services.sh
source scripts/services.sh
NODES=()
cleanup() { for p in "${NODES[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; services_stop; }
trap cleanup EXIT
services_start >/dev/null
HZ=$(getconf CLK_TCK)
PG_PID=$(head -n1 "$SERVICES_DIR/pg/data/postmaster.pid")
REDIS_PID=$(cat "$SERVICES_DIR/redis.pid")
SECRET=bench-secret-0123456789abcdefghijklmnop
export DJANGO_SETTINGS_MODULE=idp.settings.prod IDP_DB_URL=$IDP_TEST_DB_URL IDP_REDIS_URL=$IDP_TEST_REDIS_URL \
  IDP_HOSTNAME=127.0.0.1 IDP_SECRET_KEY=$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')
cat >"$SERVICES_DIR/realm.json" <<EOF
{"realm": "bench", "enabled": true, "sslRequired": "none",
 "clients": [{"clientId": "bench-app", "secret": "$SECRET", "serviceAccountsEnabled": true,
              "directAccessGrantsEnabled": true}],
 "users": [{"username": "bench-user", "enabled": true, "email": "u@example.org", "emailVerified": true,
            "firstName": "B", "lastName": "U", "credentials": [{"type": "password", "value": "bench-password-1"}]}]}
EOF
$PY manage.py import_realm "$SERVICES_DIR/realm.json" >/dev/null

declare -A URL PID
for kind in redis stateless; do
  port=$(_free_port); mport=$(_free_port)
  features=""; [ "$kind" = stateless ] && features=stateless
  IDP_FEATURES=$features IDP_BASE_URL=http://127.0.0.1:$port taskset -c 0 $PY manage.py start --bind 127.0.0.1 \
    --http-port "$port" --management-port "$mport" --workers 1 --threads 4 >"$SERVICES_DIR/$kind.log" 2>&1 &
  PID[$kind]=$!; NODES+=($!); URL[$kind]=http://127.0.0.1:$port/realms/bench/protocol/openid-connect/token
  for _ in $(seq 120); do curl -fs "http://127.0.0.1:$mport/health/ready" >/dev/null 2>&1 && break; sleep 0.5; done
done

ticks() {  # CPU ticks of processes and their children
  local total=0 pid
  for pid in "$@" $(for p in "$@"; do pgrep -P "$p" || true; done); do
    [ -r "/proc/$pid/stat" ] && total=$((total + $(sed 's/.*) //' "/proc/$pid/stat" | awk '{print $12 + $13}')))
  done
  echo "$total"
}
BASIC="Authorization: Basic $(printf 'bench-app:%s' $SECRET | base64 -w0)"
load() {  # load NAME KIND BODY: one hey run; prints NAME KIND req/s node_us pg_us redis_us
  local name=$1 kind=$2 body=$3 before after out n
  taskset -c 1 hey -z 1s -c 50 -m POST -T application/x-www-form-urlencoded -H "$BASIC" -d "$body" "${URL[$kind]}" >/dev/null
  before="$(ticks "${PID[$kind]}") $(ticks "$PG_PID") $(ticks "$REDIS_PID")"
  out=$(taskset -c 1 hey -z "${DURATION}s" -c 50 -m POST -T application/x-www-form-urlencoded -H "$BASIC" -d "$body" "${URL[$kind]}")
  after="$(ticks "${PID[$kind]}") $(ticks "$PG_PID") $(ticks "$REDIS_PID")"
  n=$(echo "$out" | awk '/^  \[200\]/ {print $2}')
  echo "$out" | grep -q '^  \[[^2]' && { echo "non-200 answers for $name $kind:"; echo "$out" | grep '^  \['; exit 1; }
  awk -v name="$name" -v kind="$kind" -v n="${n:-0}" -v hz="$HZ" -v b="$before" -v a="$after" \
    -v r="$(echo "$out" | awk '/Requests\/sec/ {print $2}')" 'BEGIN {
    split(b, x, " "); split(a, y, " "); if (n < 1) n = 1
    printf "%s %s %.0f %.0f %.0f %.0f\n", name, kind, r, (y[1]-x[1])/hz/n*1e6, (y[2]-x[2])/hz/n*1e6, (y[3]-x[3])/hz/n*1e6 }'
}

echo "machine: $(lscpu | awk -F: '/Model name/{gsub(/^ +/,"",$2); print $2}'), $(nproc) cores; $($PY -V);" \
  "$(date -u +%FT%TZ); load average before: $(cut -d' ' -f1-3 /proc/loadavg); DURATION=$DURATION ROUNDS=$ROUNDS"
RESULTS="$SERVICES_DIR/results"
for round in $(seq "$ROUNDS"); do
  order="redis stateless"; [ $((round % 2)) = 0 ] && order="stateless redis"
  for kind in $order; do
    RT=$(curl -fs -u "bench-app:$SECRET" -d grant_type=password -d username=bench-user -d password=bench-password-1 \
      "${URL[$kind]}" | $PY -c 'import json,sys; print(json.load(sys.stdin)["refresh_token"])')
    load client_credentials "$kind" grant_type=client_credentials | tee -a "$RESULTS"
    load refresh_token "$kind" "grant_type=refresh_token&refresh_token=$RT" | tee -a "$RESULTS"
  done
done
echo "medians (req/s, node / PostgreSQL / Redis CPU µs per request) and stateless / redis:"
$PY - "$RESULTS" <<'EOF'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
for name in ("client_credentials", "refresh_token"):
    med = {kind: [statistics.median(float(r[i]) for r in rows if r[0] == name and r[1] == kind) for i in range(2, 6)]
           for kind in ("redis", "stateless")}
    for kind, (rps, node, pg, redis) in med.items():
        print(f"{name:20} {kind:9} {rps:7.0f} req/s  node {node:5.0f} µs  PostgreSQL {pg:5.0f} µs  Redis {redis:4.0f} µs"
              f"  node+PG+Redis {node + pg + redis:5.0f} µs")
    r, s = med["redis"], med["stateless"]
    print(f"{name:20} stateless/redis: req/s {s[0] / r[0]:.2f}, node+PostgreSQL+Redis CPU {sum(s[1:]) / sum(r[1:]):.2f}")
EOF
