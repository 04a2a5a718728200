#!/usr/bin/env bash
# The console's realm list in process (bench/realms/realm_list.py): CPU per page with each count
# of realms in COUNTS (1: two rows with master; 11: a full page of ten; 1,000), this tree and
# OLD_TREE (a git worktree of an older commit, same schema) on the same database, in ROUNDS
# rounds whose tree order alternates, each pinned to core 0. PROFILE=1: where one tree's page goes.
# Usage: [OLD_TREE=path] bench/realms/realm_list.sh   (env: COUNTS="1 11 1000" ROUNDS=3 PAGES=200 PROFILE=)
set -euo pipefail
cd "$(dirname "$0")/../.."
COUNTS=${COUNTS:-"1 11 1000"}
ROUNDS=${ROUNDS:-3}
scripts/setup.sh test >/dev/null
# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_start idp.settings.prod
export PG_PID REDIS_PID
echo "machine: $(lscpu | awk -F: '/Model name/{gsub(/^ +/,"",$2); print $2}'), $(nproc) cores; $($PY -V);" \
  "$(date -u +%FT%TZ); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
trees=("$PWD" ${OLD_TREE:+"$OLD_TREE"})
for tree in "${trees[@]}"; do  # the static files' manifest the pages' URLs are read from, as a start makes it
  (cd "$tree" && PYTHONPATH=$tree "$PY" manage.py collectstatic --noinput -v0)
done
for count in $COUNTS; do
  $PY bench/realms/realm_list.py --create "$count"
  for round in $(seq "$ROUNDS"); do
    order=("${trees[@]}")
    [ $((round % 2)) = 0 ] && [ ${#trees[@]} = 2 ] && order=("${trees[1]}" "${trees[0]}")
    for tree in "${order[@]}"; do
      echo "$count realm(s), round $round, code of $(git -C "$tree" log -1 --format='%h' HEAD) ($([ "$tree" = "$PWD" ] && echo this tree || echo OLD_TREE)):"
      # From the tree's directory: the project's editable install would otherwise answer for its packages.
      (cd "$tree" && PYTHONPATH=$tree taskset -c 0 "$PY" -W ignore "$OLDPWD/bench/realms/realm_list.py" ${PROFILE:+--profile})
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
