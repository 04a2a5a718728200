#!/usr/bin/env bash
# Webhook delivery benchmark against real PostgreSQL, Redis and Celery workers (started here).
# Usage: bench/webhooks/run.sh [--rounds 5 --rate 50 --endpoints 20 --duration 30 --workers 1 --threads 16 --concurrency 10]
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/setup.sh test >/dev/null
# shellcheck source=scripts/services.sh
source scripts/services.sh
trap services_stop EXIT
services_start >/dev/null
export PYTHONPATH=$PWD DJANGO_SETTINGS_MODULE=bench.webhooks.settings
.venv/bin/python manage.py migrate -v0
.venv/bin/python bench/webhooks/run.py "$@"
