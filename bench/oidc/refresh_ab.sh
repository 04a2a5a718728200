#!/usr/bin/env bash
# The refresh grant of this tree against OLD_TREE's (a git worktree of an older commit, same
# schema), on one database, in one window: ROUNDS rounds, each loading this tree's server and
# then the old one with a bare view, client-credentials grants (the peer) and refresh grants, 50 concurrent
# clients, the server pinned to core 0 and hey to core 1 (as run.sh); the refresh again in a realm
# whose tokens are ES256 (bench-es256) unless ES256=0. CPU per request counted for
# the server, PostgreSQL and Redis; on a shared machine read the ratios within a round.
# Usage: OLD_TREE=path bench/oidc/refresh_ab.sh   (env: DURATION=10 ROUNDS=2 WORKERS=1 THREADS=4 ES256=1)
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${OLD_TREE:?OLD_TREE: a worktree of the commit to compare with}"
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-2}
WORKERS=${WORKERS:-1}
THREADS=${THREADS:-4}
ES256=${ES256:-1}
# shellcheck source=bench/oidc/realm.sh
source bench/oidc/realm.sh
TOKEN_ES256=$U/realms/bench-es256/protocol/openid-connect/token

echo "machine: $(lscpu | awk -F: '/Model name/{gsub(/^ +/,"",$2); print $2}'), $(nproc) cores; $($PY -V);" \
  "$(date -u +%FT%TZ); granian: $WORKERS worker(s) x $THREADS thread(s); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
  for tree in "$PWD" "$OLD_TREE"; do
    echo "round $round, server of $(git -C "$tree" log -1 --format='%h' HEAD) ($([ "$tree" = "$PWD" ] && echo this tree || echo OLD_TREE)):"
    start_server "$tree" "$PORT" "$MPORT"
    for _ in $(seq 120); do curl -fs "$U/bench/bare" >/dev/null 2>&1 && break; sleep 0.5; done
    # Django's bare view: what any request costs through Granian and the middleware, the floor's base.
    load bare_view "$U/bench/bare"
    load client_credentials -m POST -T $FORM -H "$BASIC" -d grant_type=client_credentials "$TOKEN"
    load refresh_token -m POST -T $FORM -H "$BASIC" -d "grant_type=refresh_token&refresh_token=$(signin "$TOKEN")" "$TOKEN"
    if [ "$ES256" = 1 ]; then
      load refresh_token_es256 -m POST -T $FORM -H "$BASIC" \
        -d "grant_type=refresh_token&refresh_token=$(signin "$TOKEN_ES256")" "$TOKEN_ES256"
    fi
    stop_server
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
