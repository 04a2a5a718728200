#!/usr/bin/env bash
# Two checkouts of the project side by side (A, B: their directories, e.g. one made with
# `git worktree add`), each served in production mode (manage.py start) on core 0 against the same
# PostgreSQL and Redis, the client on core 1 creating users with passwords on each in turn
# (bench/admin_api/compare.py). Both use this checkout's virtual environment unless PY_A or PY_B
# names another interpreter (a virtual environment with another build of a library, say).
# Usage: A=<dir> B=<dir> bench/admin_api/compare.sh   (env: ROUNDS CREATES CLIENTS THREADS HASH PY_A PY_B)
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${A:?the first checkout's directory}" "${B:?the second checkout's directory}"
THREADS=${THREADS:-4}
PY=$PWD/.venv/bin/python
scripts/setup.sh test >/dev/null
# shellcheck source=scripts/services.sh
source scripts/services.sh
SERVERS=()
cleanup() { for s in "${SERVERS[@]}"; do kill "$s" 2>/dev/null; done; wait 2>/dev/null; services_stop; }
trap cleanup EXIT
services_start >/dev/null
export DJANGO_SETTINGS_MODULE=idp.settings.prod IDP_DB_URL=$IDP_TEST_DB_URL IDP_REDIS_URL=$IDP_TEST_REDIS_URL \
  IDP_HOSTNAME=127.0.0.1 IDP_SECRET_KEY=$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))') \
  IDP_BOOTSTRAP_ADMIN_USERNAME=bench-admin IDP_BOOTSTRAP_ADMIN_PASSWORD=bench-admin-pass-1
URLS=()
for side in A B; do
  tree=${!side} py_side=PY_$side; py=${!py_side:-$PY}
  PORT=$(_free_port); MPORT=$(_free_port)
  # One after the other: each applies its migrations before it serves (so both run on the newer
  # schema). exec: the pid kept is the server's own, whose CPU and its worker's are counted.
  (cd "$tree" && exec env PYTHONPATH="$tree" IDP_BASE_URL="http://127.0.0.1:$PORT" taskset -c 0 "$py" manage.py start \
    --bind 127.0.0.1 --http-port "$PORT" --management-port "$MPORT" --management-bind 127.0.0.1 \
    --workers 1 --threads "$THREADS" >/dev/null 2>&1) & SERVERS+=($!)
  for _ in $(seq 120); do curl -fs "http://127.0.0.1:$MPORT/health/ready" >/dev/null 2>&1 && break; sleep 0.5; done
  URLS+=("http://127.0.0.1:$PORT")
done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $($PY -V); load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"
for side in A B; do
  py_side=PY_$side
  echo "$side: $(git -C "${!side}" log -1 --format='%h %s' | cut -c1-80), ${!py_side:-$PY}"
done
ADMIN_USER=bench-admin ADMIN_PASSWORD=bench-admin-pass-1 PYTHONPATH=$PWD \
  taskset -c 1 "$PY" bench/admin_api/compare.py "${URLS[0]}" "${SERVERS[0]}" "${URLS[1]}" "${SERVERS[1]}"
