#!/usr/bin/env bash
# OpenID Connect benchmark: production mode (manage.py start = Granian, PostgreSQL, Redis), the
# server pinned to core 0, the load generator to core 1, 50 concurrent clients.
# Measures: a bare Django view, client-credentials grants (also DPoP-bound ones, with a Python load generator
# that signs a proof per request), token exchanges, UMA decisions, refresh grants, full authorization-code
# flows (login form with Argon2id + code exchange; the same plus a TOTP code; a passkey alone),
# the demo API (local validation over HTTP) and
# in-process local token validation. Then, in the same run, the peer (django-oauth-toolkit) when
# PEER_RUN points to its run.sh, and the in-process CPU cost per request (cpu.py).
#
# Two kinds of figures: wall-clock (req/s, p50, p99 under 50 concurrent clients) and CPU per
# request: the CPU time the server's processes (main process and workers), PostgreSQL and Redis
# spent during the run (from /proc) divided by the requests answered. On a machine others use,
# wall-clock throughput moves with their load; CPU per request hardly does, and
# 1 / (server CPU per request) is what one core can serve.
# Usage: bench/oidc/run.sh   (env: DURATION=10 WORKERS=1 THREADS=4 PEER_RUN=path/to/dot-baseline/run.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
DURATION=${DURATION:-10}
# Granian keeps client connections alive (HTTP/1.1 keep-alive) and runs Django in THREADS
# blocking threads per worker. One worker for the one core
# the server is pinned to, as production runs one per core: a second process on the same core
# cost about 5 % more CPU cycles per code flow (two Python heaps competing for the core's caches).
WORKERS=${WORKERS:-1}
THREADS=${THREADS:-4}
command -v hey >/dev/null || apt-get install -y -qq hey >/dev/null
scripts/setup.sh test >/dev/null
# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_start bench.oidc.settings
export IDP_DEMO_API_REALM=bench
$PY bench/oidc/setup_realm.py >/dev/null
$PY bench/oidc/setup_exchange.py >/dev/null
$PY bench/oidc/setup_uma.py >/dev/null
start_server "$PWD" "$PORT" "$MPORT"
U=http://127.0.0.1:$PORT
for _ in $(seq 60); do curl -fs "$U/bench/bare" >/dev/null 2>&1 && break; sleep 0.5; done

# shellcheck source=bench/oidc/grants.sh
source bench/oidc/grants.sh

echo "machine: $(lscpu | awk -F: '/Model name/{gsub(/^ +/,"",$2); print $2}'), $(nproc) cores; $($PY -V);" \
  "$(date -u +%FT%TZ);" \
  "granian: $WORKERS worker(s) x $THREADS thread(s); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
load bare_django_view -m GET "$U/bench/bare"
load client_credentials -m POST -T $FORM -H "$BASIC" -d grant_type=client_credentials "$TOKEN"
# DPoP-bound client-credentials grants (RFC 9449) beside unbound ones, both from
# bench/oidc/dpop_load.py (one client code; a fresh ES256 proof per request, signed on the load
# generator's core, its own key per thread): the ratio of the two CPU figures is the one to read.
for kind in plain dpop; do
  taskset -c 1 $PY bench/oidc/dpop_load.py "$U" 2 50 $kind >/dev/null  # warm-up
  before=$(snapshot)
  out=$(taskset -c 1 $PY bench/oidc/dpop_load.py "$U" "$DURATION" 50 $kind)
  after=$(snapshot)
  echo "client_credentials_$kind (dpop_load.py, 50 concurrent): $out | $(cpu_per "$(echo "$out" | sed 's/requests=\([0-9]*\).*/\1/')" "$before" "$after")"
done
# Standard token exchange (RFC 8693) beside it: bench-app exchanges a user's access token (from a
# live SSO session) that bench-front got; the same client authentication, one more token verified.
XTOKEN=$U/realms/bench-exchange/protocol/openid-connect/token
ST=$(curl -fs -u "bench-front:$SECRET" -d grant_type=password -d username=bench-user -d password=bench-password-1 \
  "$XTOKEN" | $PY -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
load token_exchange -m POST -T $FORM -H "$BASIC" -d "grant_type=urn:ietf:params:oauth:grant-type:token-exchange&subject_token_type=urn:ietf:params:oauth:token-type:access_token&subject_token=$ST" "$XTOKEN"
load client_credentials_x -m POST -T $FORM -H "$BASIC" -d grant_type=client_credentials "$XTOKEN"
# A UMA decision (response_mode=decision, one permission of five policies) for a user's bearer
# token, and client-credentials grants in the same realm right after.
UTOKEN=$U/realms/bench-uma/protocol/openid-connect/token
UT=$(curl -fs -u "bench-app:$SECRET" -d grant_type=password -d username=bench-user -d password=bench-password-1 \
  "$UTOKEN" | $PY -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
load uma_decision -m POST -T $FORM -H "Authorization: Bearer $UT" -d "grant_type=urn:ietf:params:oauth:grant-type:uma-ticket&audience=bench-app&permission=Doc%23read&response_mode=decision" "$UTOKEN"
load client_credentials_uma -m POST -T $FORM -H "$BASIC" -d grant_type=client_credentials "$UTOKEN"
RT=$(signin "$TOKEN")
load refresh_token -m POST -T $FORM -H "$BASIC" -d "grant_type=refresh_token&refresh_token=$RT" "$TOKEN"
AT=$(curl -fs -u "bench-app:$SECRET" -d grant_type=client_credentials "$TOKEN" | \
  $PY -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
# The demo API runs as an API would: its own process (one gunicorn worker, core 0), fetching the
# JWKS from the identity provider once and validating every token locally.
APORT=$(_free_port)
taskset -c 0 .venv/bin/gunicorn idp.wsgi -w 1 -b 127.0.0.1:"$APORT" --log-level warning & API=$!
for _ in $(seq 60); do curl -fs "http://127.0.0.1:$APORT/bench/bare" >/dev/null 2>&1 && break; sleep 0.5; done
IDP=$SERVER SERVER=$API  # the API's CPU is what this line counts
load demo_api_validation -m GET -H "Authorization: Bearer $AT" "http://127.0.0.1:$APORT/demo/api/whoami"
kill $API; wait $API 2>/dev/null || true
SERVER=$IDP
before=$(snapshot)
flows=$(taskset -c 1 $PY bench/oidc/codeflow.py "$U" "$DURATION" 50)
after=$(snapshot)
echo "code_flow (login form + code exchange, 50 concurrent): $flows | $(cpu_per "$(echo "$flows" | sed 's/flows=\([0-9]*\).*/\1/')" "$before" "$after" flow)"
# The same with a second factor (password, then a TOTP code) and with a passkey alone (one
# signature check instead of Argon2id; the load generator signs with a software authenticator).
for kind in totp passkey; do
  before=$(snapshot)
  flows=$(taskset -c 1 $PY bench/oidc/codeflow.py "$U" "$DURATION" 50 "$kind")
  after=$(snapshot)
  echo "code_flow_$kind (50 concurrent): $flows | $(cpu_per "$(echo "$flows" | sed 's/flows=\([0-9]*\).*/\1/')" "$before" "$after" flow)"
done
echo "local validation (resource-server helper, 1 core): $(taskset -c 1 $PY bench/oidc/validate.py "$U" 5)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
stop_server

echo "in process, serial (bench/oidc/cpu.py):"
taskset -c 0 $PY bench/oidc/cpu.py 1000
services_stop

if [ -n "${PEER_RUN:-}" ]; then
  # The peer is its own Django project: none of this project's settings may leak into it.
  peer=$(env -u DJANGO_SETTINGS_MODULE -u PYTHONPATH bash "$PEER_RUN" 2>/dev/null | tail -n1 | \
    sed -E 's/\(([0-9.]+\[[0-9]+\] )+/(/g')
  echo "peer: $peer (load average after: $(cut -d' ' -f1-3 /proc/loadavg))"
fi
