#!/usr/bin/env bash
# Sets everything up, lints, and runs the whole test suite against real services it starts itself
# (PostgreSQL and Redis on loopback, free ports, throw-away data directories): on PostgreSQL, then
# again on dev mode's SQLite; then stops them.
# Usage: scripts/test.sh [pytest arguments, for both runs]
set -euo pipefail
cd "$(dirname "$0")/.."
# The suite's settings are its own: no IDP_ or DJANGO_ variable of the caller (a shell set up for
# production, say) reaches it.
unset $(compgen -e | grep -E '^(IDP|DJANGO)_' || true)
# Compiled modules are kept (decision 0121): without them every server, worker and manage.py
# process a test starts compiles the project again, and the SQLite run rewrites every test module.
unset PYTHONDONTWRITEBYTECODE
export IDP_APT_PACKAGES="postgresql redis-server chromium memcached xmlsec1 krb5-kdc krb5-admin-server krb5-user libkrb5-dev slapd ldap-utils libldap2-dev libsasl2-dev haproxy podman runc debootstrap podman-compose netavark aardvark-dns iptables"
scripts/setup.sh test
# shellcheck source=scripts/services.sh
source scripts/services.sh
trap services_stop EXIT
services_start
echo "lint: ruff check"
.venv/bin/ruff check --quiet .
# The suite twice, each run whatever the other's outcome: on PostgreSQL (production's database),
# then on dev mode's SQLite without the tests about PostgreSQL itself (marker postgresql) nor those
# tests/conftest.py runs once (RUN_ONCE). Redis and PostgreSQL serve both (Celery's tests use Redis
# either way).
run() {  # label, then pytest's arguments
  local start=$SECONDS code
  set +e; .venv/bin/python -m pytest "${@:2}"; code=$?; set -e
  # 5: no test selected, as when the arguments pick only tests about PostgreSQL.
  [ "$1" = SQLite ] && [ "$code" = 5 ] && code=0
  echo "$1: exit $code in $((SECONDS - start)) s"
  return "$code"
}
pg_args=("$@")
# pytest keeps only the last -m: the caller's own marker expression is joined to ours, not let
# override it (which would run the PostgreSQL tests on SQLite).
sqlite_args=() marker="not postgresql"
while [ $# -gt 0 ]; do
  case $1 in
    -m) marker="($2) and not postgresql"; shift 2 ;;
    -m*) marker="(${1#-m}) and not postgresql"; shift ;;
    *) sqlite_args+=("$1"); shift ;;
  esac
done
status=0
run PostgreSQL "${pg_args[@]}" || status=$?
IDP_TEST_DB=sqlite run SQLite -m "$marker" "${sqlite_args[@]}" || status=$?
exit $status
