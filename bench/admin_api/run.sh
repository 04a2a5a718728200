#!/usr/bin/env bash
# Admin REST API with a large realm: production mode (manage.py start = Granian, PostgreSQL,
# Redis), the server pinned to core 0, the measuring client to core 1. Seeds USERS users in bulk,
# then times GET users pages (first and last), search by prefix, e-mail, count, user creation
# with passwords and partialImport of 100,000 pre-hashed users (bench/admin_api/measure.py); then
# one user creation's CPU in process, the hash apart, and its SQL (bench/admin_api/create_cpu.py).
# Usage: bench/admin_api/run.sh   (env: USERS=1000000 THREADS=4)
set -euo pipefail
cd "$(dirname "$0")/../.."
USERS=${USERS:-1000000}
THREADS=${THREADS:-4}
scripts/setup.sh test >/dev/null
# shellcheck source=scripts/services.sh
source scripts/services.sh
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; wait 2>/dev/null; services_stop; }
trap cleanup EXIT
services_start >/dev/null
PG_PID=$(head -n1 "$SERVICES_DIR/pg/data/postmaster.pid")
PORT=$(_free_port); MPORT=$(_free_port)
export PYTHONPATH=$PWD DJANGO_SETTINGS_MODULE=idp.settings.prod IDP_DB_URL=$IDP_TEST_DB_URL \
  IDP_REDIS_URL=$IDP_TEST_REDIS_URL IDP_HOSTNAME=127.0.0.1 IDP_BASE_URL=http://127.0.0.1:$PORT \
  IDP_SECRET_KEY=$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))') \
  IDP_BOOTSTRAP_ADMIN_USERNAME=bench-admin IDP_BOOTSTRAP_ADMIN_PASSWORD=bench-admin-pass-1
PY=.venv/bin/python
$PY manage.py migrate -v0
echo "seeding $USERS users ..."
/usr/bin/time -f "seeded in %e s" $PY bench/admin_api/seed.py big "$USERS"
taskset -c 0 $PY manage.py start --bind 127.0.0.1 --http-port "$PORT" --management-port "$MPORT" \
  --management-bind 127.0.0.1 --workers 1 --threads "$THREADS" >/dev/null 2>&1 & SERVER=$!
for _ in $(seq 120); do curl -fs "http://127.0.0.1:$MPORT/health/ready" >/dev/null 2>&1 && break; sleep 0.5; done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $($PY -V); load $(cut -d' ' -f1-3 /proc/loadavg)"
ADMIN_USER=bench-admin ADMIN_PASSWORD=bench-admin-pass-1 \
  taskset -c 1 $PY bench/admin_api/measure.py "http://127.0.0.1:$PORT" big "$USERS" "$SERVER" "$PG_PID"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null || true; SERVER=""
taskset -c 0 $PY bench/admin_api/create_cpu.py 200
