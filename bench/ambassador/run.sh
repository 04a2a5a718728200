#!/bin/sh
# Runs the ambassador benchmark with the project's virtualenv when there is one.
set -e
cd "$(dirname "$0")/../.."
PY=python3
[ -x .venv/bin/python ] && PY=.venv/bin/python
exec "$PY" bench/ambassador/run.py "$@"
