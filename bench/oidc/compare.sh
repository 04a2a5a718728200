#!/usr/bin/env bash
# Runs the OpenID Connect benchmark (bench/oidc/run.sh) on an earlier commit and on this checkout,
# alternating, in one sitting, so that a change is judged against the code before it under the
# same machine load. Each tree uses its own run.sh, virtual environment and throw-away services.
# Usage: bench/oidc/compare.sh REV [ROUNDS]   (env: DURATION as for run.sh; BASE_TREE=path to reuse
#        an existing checkout of REV instead of making a temporary git worktree)
set -euo pipefail
cd "$(dirname "$0")/../.."
REV=${1:?usage: bench/oidc/compare.sh REV [ROUNDS]}
ROUNDS=${2:-2}
HERE=$PWD
BASE=${BASE_TREE:-}
made=""
if [ -z "$BASE" ]; then
  BASE=$(mktemp -d -t idp-bench-base.XXXXXX)
  git worktree add -q --detach "$BASE" "$REV"
  made=$BASE
fi
cleanup() { [ -n "$made" ] && git worktree remove --force "$made" >/dev/null 2>&1; true; }
trap cleanup EXIT
(cd "$BASE" && scripts/setup.sh test >/dev/null)

summary() { grep -E '^(client_credentials|refresh_token|code_flow)' | sed -E 's/  +/ /g'; }
for round in $(seq "$ROUNDS"); do
  # Alternate the order so neither tree always runs on the warmer (or more loaded) machine.
  if [ $((round % 2)) = 1 ]; then order="base this"; else order="this base"; fi
  for which in $order; do
    tree=$HERE; [ "$which" = base ] && tree=$BASE
    echo "== round $round, $which ($(git -C "$tree" rev-parse --short HEAD)), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    (cd "$tree" && bench/oidc/run.sh) | summary
  done
done
