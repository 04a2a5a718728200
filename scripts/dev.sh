#!/usr/bin/env bash
# Sets everything up and starts the service in development mode: embedded SQLite, local caches,
# the bootstrap admin from IDP_BOOTSTRAP_ADMIN_USERNAME / IDP_BOOTSTRAP_ADMIN_PASSWORD, a demo
# realm; public http on 8080, health and metrics on 9000. Extra arguments go to start_dev.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export DJANGO_SETTINGS_MODULE=idp.settings.dev
exec .venv/bin/python manage.py start_dev "$@"
