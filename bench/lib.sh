# Shell helpers of the benchmarks that load a server with hey: their own PostgreSQL and Redis, and
# CPU per request of the server (its processes and their children), PostgreSQL and Redis, read
# from /proc. SERVER is the server's main process id (start_server sets it).

# bench_start SETTINGS: PostgreSQL and Redis for this run, migrated, stopped with SERVER when the
# script exits; sets HZ, PG_PID, REDIS_PID, PORT, MPORT, PY and the server's environment
# (SETTINGS: its Django settings module).
bench_start() {
  # shellcheck source=scripts/services.sh
  source scripts/services.sh
  SERVER=""
  trap bench_stop EXIT
  services_start >/dev/null
  HZ=$(getconf CLK_TCK)
  PG_PID=$(head -n1 "$SERVICES_DIR/pg/data/postmaster.pid")
  # Redis daemonizes: its pid file may come a moment after redis-server returns on a busy machine.
  for _ in $(seq 50); do [ -s "$SERVICES_DIR/redis.pid" ] && break; sleep 0.1; done
  REDIS_PID=$(cat "$SERVICES_DIR/redis.pid")
  PORT=$(_free_port); MPORT=$(_free_port)
  export PYTHONPATH=$PWD DJANGO_SETTINGS_MODULE=$1 IDP_DB_URL=$IDP_TEST_DB_URL \
    IDP_REDIS_URL=$IDP_TEST_REDIS_URL IDP_HOSTNAME=127.0.0.1 IDP_BASE_URL=http://127.0.0.1:$PORT \
    IDP_SECRET_KEY=$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')
  PY=$PWD/.venv/bin/python
  $PY manage.py migrate -v0
}
bench_stop() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; wait 2>/dev/null; services_stop; }

# CPU ticks (user + system) of processes and their children; the command name may hold spaces.
ticks() {
  local total=0 pid
  for pid in "$@" $(for p in "$@"; do pgrep -P "$p" || true; done); do
    [ -r "/proc/$pid/stat" ] && total=$((total + $(sed 's/.*) //' "/proc/$pid/stat" | awk '{print $12 + $13}')))
  done
  echo "$total"
}
snapshot() { echo "$(ticks "$SERVER") $(ticks "$PG_PID") $(ticks "$REDIS_PID")"; }
# cpu_per COUNT BEFORE AFTER [UNIT]: µs of server, PostgreSQL and Redis CPU per UNIT (request).
cpu_per() {
  awk -v n="$1" -v hz="$HZ" -v b="$2" -v a="$3" -v u="${4:-request}" 'BEGIN {
    split(b, x, " "); split(a, y, " "); if (n < 1) n = 1
    s = (y[1] - x[1]) / hz / n; p = (y[2] - x[2]) / hz / n; r = (y[3] - x[3]) / hz / n
    printf "CPU/%s: server %.0f µs (%.0f/s per core), PostgreSQL %.0f µs, Redis %.0f µs", u, s * 1e6, (s > 0 ? 1 / s : 0), p * 1e6, r * 1e6 }'
}
# load NAME HEY-ARGS...: a 2 s warm-up, then DURATION seconds of 50 concurrent clients on core 1:
# requests/s, p50 and p99 (ms), status codes and CPU per request.
load() {
  local name=$1 before out after n; shift
  taskset -c 1 hey -z 2s -c 50 "$@" >/dev/null
  before=$(snapshot)
  out=$(taskset -c 1 hey -z "${DURATION}s" -c 50 "$@")
  after=$(snapshot)
  n=$(echo "$out" | awk '/^  \[[0-9]+\]/ {n += $2} END {print n + 0}')
  echo "$out" | awk -v n="$name" '
    /Requests\/sec/ {r=$2} / 50%/ {p50=$3*1000} / 99%/ {p99=$3*1000} /^  \[[0-9]+\]/ {c=c $1 $2 " "}
    END {printf "  %-26s %8.0f req/s  p50 %6.1f ms  p99 %6.1f ms  status %s| ", n, r, p50, p99, c}'
  cpu_per "$n" "$before" "$after"; echo
}
# start_server TREE PORT MPORT: TREE's manage.py start on core 0 (SERVER is its process id).
start_server() {
  (cd "$1" && PYTHONPATH=$1 exec taskset -c 0 "$PY" manage.py start --bind 127.0.0.1 --http-port "$2" \
    --management-port "$3" --management-bind 127.0.0.1 --workers "$WORKERS" --threads "$THREADS" >/dev/null 2>&1) &
  SERVER=$!
}
stop_server() { kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null || true; SERVER=""; }
