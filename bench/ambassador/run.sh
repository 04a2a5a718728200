#!/bin/sh
# Runs the ambassador benchmark with the project's virtualenv when there is one.
# OLD_TREE=DIR (a git worktree of an older commit) runs that tree's ambassador beside this one.
set -e
cd "$(dirname "$0")/../.."
PY=python3
[ -x .venv/bin/python ] && PY=.venv/bin/python
if [ -n "$OLD_TREE" ]; then
    exec "$PY" bench/ambassador/run.py --old-tree "$OLD_TREE" "$@"
fi
exec "$PY" bench/ambassador/run.py "$@"
