#!/bin/sh
# Instructions per call of callpath.py, counted by valgrind (callgrind): a figure that a shared,
# loaded machine does not move, unlike CPU time. Two runs, of CALLS and 3 × CALLS calls; their
# difference over 2 × CALLS is the count per call without the interpreter's start. Arguments
# after CALLS go to callpath.py (--bare, --typed, --access-log null); PYTHONPATH=TREE counts that tree.
#   bench/ambassador/instructions.sh [CALLS] [callpath.py arguments]
# Installs valgrind (Debian) when missing, and Cython for --typed (the prototype of decision 0114).
set -e
cd "$(dirname "$0")/../.."
PY=python3
[ -x .venv/bin/python ] && PY=.venv/bin/python
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind >/dev/null; }
case " $* " in *" --typed "*) "$PY" -c 'import Cython' 2>/dev/null || "$PY" -m pip install -q 'Cython>=3.1,<4' ;; esac
calls=${1:-8000}
[ $# -gt 0 ] && shift
"$PY" bench/ambassador/callpath.py --calls 8 --rounds 1 "$@" >/dev/null  # compiled modules (and --typed's build) first
out=$(mktemp -d)
count() {
    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        "$PY" bench/ambassador/callpath.py --rounds 1 --calls "$@" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
count "$calls" "$@" >"$out/a" &
count $((calls * 3)) "$@" >"$out/b" &
wait
echo "$((($(cat "$out/b") - $(cat "$out/a")) / (calls * 2))) instructions per call"
rm -rf "$out"
