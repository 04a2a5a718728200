#!/usr/bin/env bash
# Sets everything up, lints, and runs the whole test suite against real services it starts itself
# (PostgreSQL and Redis on loopback, free ports, throw-away data directories), then stops them.
# Usage: scripts/test.sh [pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
# The suite's settings are its own: no IDP_ or DJANGO_ variable of the caller (a shell set up for
# production, say) reaches it.
unset $(compgen -e | grep -E '^(IDP|DJANGO)_' || true)
export IDP_APT_PACKAGES="postgresql redis-server chromium memcached xmlsec1 krb5-kdc krb5-admin-server krb5-user libkrb5-dev slapd ldap-utils libldap2-dev libsasl2-dev"
scripts/setup.sh test
# shellcheck source=scripts/services.sh
source scripts/services.sh
trap services_stop EXIT
services_start
echo "lint: ruff check"
.venv/bin/ruff check --quiet .
set +e
.venv/bin/python -m pytest "$@"
status=$?
set -e
exit $status
