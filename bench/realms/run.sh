#!/usr/bin/env bash
# Many realms: the same server with 1 realm, 11 and 1,000 (each a confidential client with a
# service account and a user, bench/realms/setup.py, one import process per core), in one run on
# one database: first 1 realm is created and measured, then 10 more, then the rest. With master,
# the console's realm list shows 2 rows, then a full page of 10 twice: 11 against 1 is what the
# rows cost, 1,000 against 11 what the realm count costs. Production mode (manage.py
# start = Granian, PostgreSQL, Redis), the server pinned to core 0, the load generator to core 1.
#
# Per realm count: start (launch to the first token answered: wall time and the CPU the server's
# processes spent, median of STARTS starts; the CPU is the figure to read on a busy machine),
# memory per worker (RSS of each Granian worker after a warm-up that asks a token in every realm),
# the CPU per token of a second round over every realm (a realm dropped from a worker's bounded
# cache is read again: decision 0107), client-credentials
# throughput and CPU per request (server, PostgreSQL and Redis, from /proc) in the first realm
# and in the last one, and the console's realm list (/admin/master/console/realms/realm/, as the
# master admin) with its header switcher: median and p99 of serial requests, CPU per request.
# OLD_TREE=path (a git worktree of an older commit, same schema): its server is measured the same
# way right after this tree's, on the same database, with the same realms.
# Usage: bench/realms/run.sh   (env: DURATION=10 WORKERS=1 THREADS=4 COUNTS="1 11 1000" STARTS=3 OLD_TREE=)
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION=${DURATION:-10}
WORKERS=${WORKERS:-1}
THREADS=${THREADS:-4}
COUNTS=${COUNTS:-"1 11 1000"}
STARTS=${STARTS:-3}
command -v hey >/dev/null || apt-get install -y -qq hey >/dev/null
scripts/setup.sh test >/dev/null
# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_start idp.settings.prod
U=http://127.0.0.1:$PORT
BASIC="Authorization: Basic $(printf 'app:%s' bench-secret-0123456789abcdefghijklmnop | base64 -w0)"
FORM=application/x-www-form-urlencoded
token_url() { printf '%s/realms/realm-%04d/protocol/openid-connect/token' "$U" "$1"; }

median() { sort -n | awk 'NF {v[++n] = $1} END {print v[int((n + 1) / 2)]}'; }
every_realm() {  # every_realm COUNT: a token in each realm, serially, from core 1
  for n in $(seq 0 $(($1 - 1))); do printf 'url = "%s"\noutput = "/dev/null"\n' "$(token_url "$n")"; done | \
    taskset -c 1 curl -fs -K - -H "$BASIC" -d grant_type=client_credentials
}
measure() {  # measure TREE COUNT: start, memory, tokens and the realm list of TREE's server
  walls=""; cpus=""
  for i in $(seq "$STARTS"); do
    if [ "$i" != 1 ]; then
      stop_server
      while curl -s -o /dev/null "$U/"; do sleep 0.1; done  # until no worker answers any more
    fi
    started=$(date +%s.%N)
    start_server "$1" "$PORT" "$MPORT"
    until curl -fs -o /dev/null -H "$BASIC" -d grant_type=client_credentials "$(token_url 0)"; do sleep 0.05; done
    walls="$walls $(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN {printf "%.2f", e - s}')"
    cpus="$cpus $(awk -v t="$(ticks "$SERVER")" -v hz="$HZ" 'BEGIN {printf "%.2f", t / hz}')"
  done
  echo "  start (launch to the first token), median of $STARTS: wall $(echo "$walls" | tr ' ' '\n' | median) s," \
    "server CPU $(echo "$cpus" | tr ' ' '\n' | median) s (wall:$walls; CPU:$cpus)"
  # Warm-up: a token in every realm, then the console's realm list.
  every_realm "$2"
  taskset -c 1 hey -n 20 -c 1 -H "Cookie: $COOKIE" "$U/admin/master/console/realms/realm/" >/dev/null
  rss=""
  for pid in $(pgrep -P "$SERVER"); do rss="$rss $(awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$pid/status")"; done
  echo "  RSS per worker after warm-up (MiB):$rss"
  before=$(snapshot)
  every_realm "$2"
  after=$(snapshot)
  echo "  a second token in every realm: $(cpu_per "$2" "$before" "$after")"
  load "client_credentials_first" -m POST -T $FORM -H "$BASIC" -d grant_type=client_credentials "$(token_url 0)"
  load "client_credentials_last" -m POST -T $FORM -H "$BASIC" -d grant_type=client_credentials "$(token_url $(($2 - 1)))"
  # Serial requests wait for a core on a busy machine: the CPU per request is the figure to read.
  before=$(snapshot)
  out=$(taskset -c 1 hey -n 200 -c 1 -H "Cookie: $COOKIE" "$U/admin/master/console/realms/realm/")
  after=$(snapshot)
  echo "$out" | awk '/ 50%/ {p50=$3*1000} / 99%/ {p99=$3*1000} /^  \[[0-9]+\]/ {c=c $1 $2 " "}
    END {printf "  console realm list (200 serial GETs): p50 %.1f ms  p99 %.1f ms  status %s| ", p50, p99, c}'
  cpu_per 200 "$before" "$after"; echo
  stop_server
}

echo "machine: $(lscpu | awk -F: '/Model name/{gsub(/^ +/,"",$2); print $2}'), $(nproc) cores; $($PY -V);" \
  "$(date -u +%FT%TZ); granian: $WORKERS worker(s) x $THREADS thread(s); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for count in $COUNTS; do
  started=$(date +%s.%N)
  COOKIE=$($PY bench/realms/setup.py "$count" | tail -n1)
  echo "$count realm(s): created in $(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}') s"
  for tree in "$PWD" ${OLD_TREE:+"$OLD_TREE"}; do
    echo " server of $(git -C "$tree" log -1 --format='%h %cs' HEAD) ($([ "$tree" = "$PWD" ] && echo this tree || echo OLD_TREE)):"
    measure "$tree" "$count"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
