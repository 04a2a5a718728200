#!/usr/bin/env bash
# OpenID Connect benchmark: production mode (manage.py start = gunicorn, PostgreSQL, Redis), the
# server pinned to core 0, the load generator to core 1, 50 concurrent clients.
# Measures: a bare Django view, client-credentials grants, refresh grants, full authorization-code
# flows (login form with Argon2id + code exchange), the demo API (local validation over HTTP) and
# in-process local token validation. Then, in the same run, the peer (django-oauth-toolkit) when
# PEER_RUN points to its run.sh.
# Usage: bench/oidc/run.sh   (env: DURATION=10 WORKERS=2 PEER_RUN=path/to/dot-baseline/run.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION=${DURATION:-10}
WORKERS=${WORKERS:-2}
command -v hey >/dev/null || apt-get install -y -qq hey >/dev/null
scripts/setup.sh test >/dev/null
# shellcheck source=scripts/services.sh
source scripts/services.sh
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; wait 2>/dev/null; services_stop; }
trap cleanup EXIT
services_start >/dev/null

PORT=$(_free_port); MPORT=$(_free_port)
export PYTHONPATH=$PWD DJANGO_SETTINGS_MODULE=bench.oidc.settings IDP_DB_URL=$IDP_TEST_DB_URL IDP_REDIS_URL=$IDP_TEST_REDIS_URL \
  IDP_HOSTNAME=127.0.0.1 IDP_BASE_URL=http://127.0.0.1:$PORT IDP_DEMO_API_REALM=bench \
  IDP_SECRET_KEY=$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')
PY=.venv/bin/python
$PY manage.py migrate -v0
$PY bench/oidc/setup_realm.py >/dev/null
taskset -c 0 $PY manage.py start --bind 127.0.0.1 --http-port "$PORT" --management-port "$MPORT" \
  --management-bind 127.0.0.1 --workers "$WORKERS" >/dev/null 2>&1 & SERVER=$!
U=http://127.0.0.1:$PORT
for _ in $(seq 60); do curl -fs "$U/bench/bare" >/dev/null 2>&1 && break; sleep 0.5; done

SECRET=bench-secret-0123456789abcdefghijklmnop
BASIC="Authorization: Basic $(printf 'bench-app:%s' $SECRET | base64 -w0)"
TOKEN=$U/realms/bench/protocol/openid-connect/token
FORM=application/x-www-form-urlencoded

# hey: requests/s, p50 and p99 latency (ms), and every status code seen.
load() {
  local name=$1; shift
  taskset -c 1 hey -z 2s -c 50 "$@" >/dev/null  # warm-up: caches, connections
  taskset -c 1 hey -z "${DURATION}s" -c 50 "$@" | awk -v n="$name" '
    /Requests\/sec/ {r=$2} / 50%/ {p50=$3*1000} / 99%/ {p99=$3*1000} /^  \[[0-9]+\]/ {c=c $1 $2 " "}
    END {printf "%-22s %8.0f req/s  p50 %6.1f ms  p99 %6.1f ms  status %s\n", n, r, p50, p99, c}'
}

echo "machine: $(lscpu | awk -F: '/Model name/{gsub(/^ +/,"",$2); print $2}'), $(nproc) cores; $(date -u +%FT%TZ); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
load bare_django_view -m GET "$U/bench/bare"
load client_credentials -m POST -T $FORM -H "$BASIC" -d grant_type=client_credentials "$TOKEN"
RT=$(curl -fs -u "bench-app:$SECRET" -d grant_type=password -d username=bench-user -d password=bench-password-1 \
  -d scope=openid "$TOKEN" | $PY -c 'import json,sys; print(json.load(sys.stdin)["refresh_token"])')
load refresh_token -m POST -T $FORM -H "$BASIC" -d "grant_type=refresh_token&refresh_token=$RT" "$TOKEN"
AT=$(curl -fs -u "bench-app:$SECRET" -d grant_type=client_credentials "$TOKEN" | \
  $PY -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
# The demo API runs as an API would: its own process (one gunicorn worker, core 0), fetching the
# JWKS from the identity provider once and validating every token locally.
APORT=$(_free_port)
taskset -c 0 .venv/bin/gunicorn idp.wsgi -w 1 -b 127.0.0.1:"$APORT" --log-level warning & API=$!
for _ in $(seq 60); do curl -fs "http://127.0.0.1:$APORT/bench/bare" >/dev/null 2>&1 && break; sleep 0.5; done
load demo_api_validation -m GET -H "Authorization: Bearer $AT" "http://127.0.0.1:$APORT/demo/api/whoami"
kill $API; wait $API 2>/dev/null || true
echo "code_flow (login form + code exchange, 50 concurrent): $(taskset -c 1 $PY bench/oidc/codeflow.py "$U" "$DURATION" 50)"
echo "local validation (resource-server helper, 1 core): $(taskset -c 1 $PY bench/oidc/validate.py "$U" 5)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=""
services_stop

if [ -n "${PEER_RUN:-}" ]; then
  echo "peer: $(bash "$PEER_RUN" 2>/dev/null | tail -n1)"
fi
