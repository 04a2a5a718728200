#!/usr/bin/env bash
# Server starts against each other: STARTS servers of each variant (a tree, and an environment for
# its server), all started at once and loaded in turn, ROUNDS rounds, by the refresh and
# client-credentials grants of the bench realm (bench/oidc/grants.sh; bench/lib.sh's load: 50
# clients on core 1, every server on core 0). A server's CPU per request moves by 20-30 % from
# one start to the next on this host while its rounds stay together, so a tree is read by the
# median over its starts, never by one start; each start is read by its median over the rounds.
# VARIANT: NAME=TREE[:VAR=VALUE,...], e.g. new=. old=$OLD_TREE, or seed0=.:PYTHONHASHSEED=0.
# Usage: bench/starts/servers.sh VARIANT...   (env: STARTS=3 ROUNDS=3 DURATION=5 WORKERS=1 THREADS=4
#        SCENARIOS="refresh_token client_credentials", also bare_view)
set -euo pipefail
cd "$(dirname "$0")/../.."
STARTS=${STARTS:-3}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
WORKERS=${WORKERS:-1}
THREADS=${THREADS:-4}
SCENARIOS=${SCENARIOS:-refresh_token client_credentials}
[ $# -gt 0 ] || set -- new=.
# shellcheck source=bench/oidc/realm.sh
source bench/oidc/realm.sh
SERVERS=()  # "name start pid port"
# detail PID: user and system ticks and voluntary / involuntary context switches of a server's
# processes, all their threads.
detail() {
  local pid
  for pid in "$1" $(pgrep -P "$1" || true); do
    sed 's/.*) //' "/proc/$pid/stat" | awk '{print $12, $13}'
    cat /proc/"$pid"/task/*/status | awk '/^voluntary_ctxt/ {v += $2} /^nonvoluntary_ctxt/ {i += $2} END {print v, i}'
  done | paste -sd' ' | awk '{for (i = 1; i <= NF; i++) s[(i - 1) % 4] += $i} END {print s[0], s[1], s[2], s[3]}'
}
stop_all() { for s in "${SERVERS[@]}"; do kill "$(echo "$s" | cut -d' ' -f3)" 2>/dev/null || true; done; bench_stop; }
trap stop_all EXIT

echo "machine: $(lscpu | awk -F: '/Model name/{gsub(/^ +/,"",$2); print $2}'), $(nproc) cores; $($PY -V);" \
  "$(date -u +%FT%TZ); $STARTS starts x $ROUNDS rounds of ${DURATION}s; granian: $WORKERS worker(s) x $THREADS" \
  "thread(s); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for start in $(seq "$STARTS"); do
  for variant in "$@"; do
    name=${variant%%=*} spec=${variant#*=}
    tree=$(cd "${spec%%:*}" && pwd) vars=""
    [[ $spec == *:* ]] && vars=${spec#*:}
    port=$(_free_port)
    for kv in ${vars//,/ }; do export "${kv?}"; done
    start_server "$tree" "$port" "$(_free_port)"
    SERVERS+=("$name $start $SERVER $port")
    for kv in ${vars//,/ }; do unset "${kv%%=*}"; done
  done
done
for s in "${SERVERS[@]}"; do
  port=$(echo "$s" | cut -d' ' -f4)
  for _ in $(seq 120); do curl -fs "http://127.0.0.1:$port/bench/bare" >/dev/null 2>&1 && break; sleep 0.5; done
done
# The sign-in through the first server (PORT, bench_start's, serves nothing).
REFRESH=$(signin "http://127.0.0.1:$(echo "${SERVERS[0]}" | cut -d' ' -f4)/realms/bench/protocol/openid-connect/token")
out=$(mktemp)
for round in $(seq "$ROUNDS"); do
  # Every other round in the reverse order: no start is always loaded right after another.
  order=("${SERVERS[@]}"); [ $((round % 2)) = 0 ] && mapfile -t order < <(printf '%s\n' "${SERVERS[@]}" | tac)
  for s in "${order[@]}"; do
    read -r name start SERVER port <<<"$s"
    T=http://127.0.0.1:$port/realms/bench/protocol/openid-connect/token
    for scenario in $SCENARIOS; do
      before=$(detail "$SERVER")
      case $scenario in
        refresh_token) line=$(load refresh_token -m POST -T $FORM -H "$BASIC" \
          -d "grant_type=refresh_token&refresh_token=$REFRESH" "$T") ;;
        client_credentials) line=$(load client_credentials -m POST -T $FORM -H "$BASIC" \
          -d grant_type=client_credentials "$T") ;;
        bare_view) line=$(load bare_view "http://127.0.0.1:$port/bench/bare") ;;
      esac
      read -r u0 s0 v0 i0 <<<"$before"; read -r u1 s1 v1 i1 <<<"$(detail "$SERVER")"
      # Over the warm-up and the load (lib.sh's load reads only the latter): shares, not per request.
      line+=$(awk -v hz="$HZ" -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v v=$((v1 - v0)) -v i=$((i1 - i0)) 'BEGIN {
        ms = (u + s) / hz * 1000; if (ms <= 0) ms = 1
        printf " | server system %.0f %% of its CPU, %.1f switches + %.2f involuntary a CPU ms", 100 * s / (u + s + 1e-9), v / ms, i / ms}')
      echo "round $round $name start $start:$line"
      echo "$name $start $scenario $(echo "$line" | sed 's/.*server \([0-9]*\) µs.*/\1/')" >>"$out"
    done
  done
done
SERVER=""
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "server CPU per request (µs): each start's median over its rounds; each variant's median over its starts"
$PY - "$out" <<'EOF'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
for scenario in dict.fromkeys(r[2] for r in rows):
    for name in dict.fromkeys(r[0] for r in rows):
        starts = {}
        for n, start, s, us in rows:
            if (n, s) == (name, scenario):
                starts.setdefault(start, []).append(int(us))
        medians = [statistics.median(v) for v in starts.values()]
        print(f"  {scenario:20s} {name:10s} median {statistics.median(medians):6.0f}  starts "
              + ", ".join(f"{m:.0f}" for m in medians) + f"  (max/min {max(medians) / min(medians):.2f})")
EOF
rm -f "$out"
