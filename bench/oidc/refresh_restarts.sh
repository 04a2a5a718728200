#!/usr/bin/env bash
# Why a refresh round costs more in some of refresh_ab.sh's server starts than in others (decision
# 0117): STARTS starts of this tree's server on one database and Redis, as refresh_ab.sh's rounds
# (1 worker x THREADS threads on core 0, hey with 50 clients on core 1), each loading client
# credentials, a refresh with a new sign-in (a new SSO session) and a refresh with the first
# start's refresh token (the same session throughout). Per load: the server's CPU per request
# (and PostgreSQL's and Redis's), the Redis commands per request, and the server's context
# switches per request (perf, over the same seconds): more work shows as more commands or a
# session that costs more than another in the same start, a thread convoy as more switches.
# Usage: bench/oidc/refresh_restarts.sh   (env: STARTS=4 DURATION=8 THREADS=4)
set -euo pipefail
cd "$(dirname "$0")/../.."
STARTS=${STARTS:-4}
DURATION=${DURATION:-8}
WORKERS=1
THREADS=${THREADS:-4}
command -v perf >/dev/null || { echo "perf is needed (apt-get install linux-perf)" >&2; exit 1; }
# shellcheck source=bench/oidc/realm.sh
source bench/oidc/realm.sh
redis_commands() { redis-cli -u "$IDP_TEST_REDIS_URL" info stats | awk -F: '/^total_commands_processed/ {print $2 + 0}'; }

# counted NAME HEY-ARGS...: lib.sh's load, with perf counting the server's processes meanwhile.
counted() {
  local name=$1 before out after n pids counts commands; shift
  taskset -c 1 hey -z 2s -c 50 "$@" >/dev/null
  pids=$(echo "$SERVER" $(pgrep -P "$SERVER") | tr ' ' ,)
  counts=$(mktemp)
  commands=$(redis_commands)
  perf stat -x, -e context-switches -p "$pids" -o "$counts" &
  local perf_pid=$!
  sleep 0.2
  before=$(snapshot)
  out=$(taskset -c 1 hey -z "${DURATION}s" -c 50 "$@")
  after=$(snapshot)
  commands=$(($(redis_commands) - commands))
  kill -INT "$perf_pid"; wait "$perf_pid" || true
  n=$(echo "$out" | awk '/^  \[[0-9]+\]/ {n += $2} END {print n + 0}')
  printf '  %-24s %5d req/s | ' "$name" "$(echo "$out" | awk '/Requests\/sec/ {printf "%d", $2}')"
  cpu_per "$n" "$before" "$after"
  awk -F, -v n="$n" -v r="$commands" '$3 == "context-switches" {c = $1}
    END {printf " | %.2f Redis commands, %.1f context switches per request\n", r / n, c / n}' "$counts"
  rm -f "$counts"
}

echo "machine: $(lscpu | awk -F: '/Model name/{gsub(/^ +/,"",$2); print $2}'), $(nproc) cores; $($PY -V);" \
  "$(date -u +%FT%TZ); this tree $(git log -1 --format=%h); granian: $WORKERS worker x $THREADS threads;" \
  "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
FIRST=""
for start in $(seq "$STARTS"); do
  echo "start $start:"
  start_server "$PWD" "$PORT" "$MPORT"
  for _ in $(seq 120); do curl -fs "$U/bench/bare" >/dev/null 2>&1 && break; sleep 0.5; done
  counted client_credentials -m POST -T $FORM -H "$BASIC" -d grant_type=client_credentials "$TOKEN"
  NEW=$(signin "$TOKEN")
  FIRST=${FIRST:-$NEW}
  counted refresh_new_signin -m POST -T $FORM -H "$BASIC" -d "grant_type=refresh_token&refresh_token=$NEW" "$TOKEN"
  counted refresh_first_session -m POST -T $FORM -H "$BASIC" -d "grant_type=refresh_token&refresh_token=$FIRST" "$TOKEN"
  stop_server
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
