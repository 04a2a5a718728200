#!/usr/bin/env bash
# One server start, Redis moved between rounds: on the server's core (0), on the load generator's
# (1), or where the scheduler likes (0,1, as bench/lib.sh leaves it). The refresh makes one Redis
# round trip a request, client credentials none: if where Redis runs moves the server's CPU per
# refresh, a run's figure depends on where the scheduler happened to put Redis.
# Usage: bench/starts/placement.sh   (env: ROUNDS=3 DURATION=5 WORKERS=1 THREADS=4 PLACES="0 1 0,1")
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
WORKERS=${WORKERS:-1}
THREADS=${THREADS:-4}
PLACES=${PLACES:-0 1 0,1}
# shellcheck source=bench/oidc/realm.sh
source bench/oidc/realm.sh
start_server "$PWD" "$PORT" "$MPORT"
for _ in $(seq 120); do curl -fs "$U/bench/bare" >/dev/null 2>&1 && break; sleep 0.5; done
REFRESH=$(signin "$TOKEN")
echo "$(date -u +%FT%TZ); one start, $ROUNDS rounds of ${DURATION}s; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
out=$(mktemp)
for round in $(seq "$ROUNDS"); do
  for cpus in $PLACES; do
    taskset -pc "$cpus" "$REDIS_PID" >/dev/null
    for scenario in refresh_token client_credentials; do
      if [ $scenario = refresh_token ]; then
        line=$(load refresh_token -m POST -T $FORM -H "$BASIC" -d "grant_type=refresh_token&refresh_token=$REFRESH" "$TOKEN")
      else
        line=$(load client_credentials -m POST -T $FORM -H "$BASIC" -d grant_type=client_credentials "$TOKEN")
      fi
      echo "round $round, Redis on core(s) $cpus:$line"
      echo "$cpus $scenario $(echo "$line" | sed 's/.*server \([0-9]*\) µs.*/\1/')" >>"$out"
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
awk '{k = $2 " Redis on " $1; v[k] = v[k] " " $3} END {for (k in v) print "  " k ":" v[k] " µs"}' "$out" | sort
rm -f "$out"
