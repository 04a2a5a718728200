#!/usr/bin/env bash
# Memory of a process serving COUNT realms in turn, against one realm, in process
# (bench/realms/memory.py): its own PostgreSQL and Redis, COUNT realms of bench/realms/setup.py.
# KEEP=DIR: the realms made once are dumped into DIR (with the secret key that sealed their keys)
# and restored from there by the next run with the same DIR and COUNT (setup takes minutes on a
# busy machine, a restore seconds). OLD_TREE=path (a git worktree of an older commit, same schema):
# the same measurement with its code, right after this tree's, on the same database.
# Usage: [KEEP=DIR] [OLD_TREE=path] bench/realms/memory.sh COUNT [--trace]
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/setup.sh test >/dev/null
# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_start idp.settings.prod
echo "$(date -u +%FT%TZ); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
kept=${KEEP:+$KEEP/realms-$1}
if [ -n "$kept" ] && [ -f "$kept.dump" ]; then
  IDP_SECRET_KEY=$(cat "$kept.key")
  pg_restore --clean --if-exists --no-owner -d "$IDP_DB_URL" "$kept.dump"
  psql -q -d "$IDP_DB_URL" -c ANALYZE
else
  $PY bench/realms/setup.py "$1" >/dev/null
  if [ -n "$kept" ]; then
    mkdir -p "$KEEP"
    pg_dump -Fc -f "$kept.dump" "$IDP_DB_URL"
    (umask 077 && printf %s "$IDP_SECRET_KEY" >"$kept.key")
  fi
fi
for tree in "$PWD" ${OLD_TREE:+"$OLD_TREE"}; do
  echo "code of $(git -C "$tree" log -1 --format='%h %cs' HEAD) ($([ "$tree" = "$PWD" ] && echo this tree || echo OLD_TREE)):"
  # From the tree's directory: the project's editable install would otherwise answer for its packages.
  for count in 1 "$1"; do
    (cd "$tree" && PYTHONPATH=$tree taskset -c 0 "$PY" -W ignore "$OLDPWD/bench/realms/memory.py" "$count" "${@:2}")
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
