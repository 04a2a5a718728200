#!/usr/bin/env bash
# LDAP federation benchmark: a real slapd seeded with USERS people (slapadd), PostgreSQL from
# scripts/services.sh. Measures the full sync, a changed-users sync of CHANGED entries, the
# sign-in of a federated user against a local one (p50 of the password check) and listing 100
# imported users through the Admin API with the directory stopped.
# Usage: bench/federation/run.sh   (env: USERS=100000 CHANGED=1000 SIGNINS=300)
set -euo pipefail
cd "$(dirname "$0")/../.."
IDP_APT_PACKAGES="slapd ldap-utils libldap2-dev libsasl2-dev" scripts/setup.sh test >/dev/null
# shellcheck source=scripts/services.sh
source scripts/services.sh
trap services_stop EXIT
services_start >/dev/null
export PYTHONPATH=$PWD DJANGO_SETTINGS_MODULE=bench.federation.settings
.venv/bin/python manage.py migrate -v0
.venv/bin/python bench/federation/run.py --users "${USERS:-100000}" --changed "${CHANGED:-1000}" \
  --signins "${SIGNINS:-300}"
