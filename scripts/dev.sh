#!/usr/bin/env bash
# Sets everything up and starts the service in development mode: embedded SQLite, local caches,
# the bootstrap admin from IDP_BOOTSTRAP_ADMIN_USERNAME / IDP_BOOTSTRAP_ADMIN_PASSWORD, a demo
# realm; public http on 8080, health and metrics on 9000. Extra arguments go to start_dev.
set -euo pipefail
cd "$(dirname "$0")/.."
# python-ldap (user federation) is built against OpenLDAP's and Cyrus SASL's headers.
IDP_APT_PACKAGES="${IDP_APT_PACKAGES:-libldap2-dev libsasl2-dev}" scripts/setup.sh
export DJANGO_SETTINGS_MODULE=idp.settings.dev
exec .venv/bin/python manage.py start_dev "$@"
