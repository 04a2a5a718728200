#!/bin/sh
# PostgreSQL in deploy/compose.yaml: the cluster made on first start, with the idp role and
# database (password from POSTGRES_PASSWORD, scram-sha-256 from the compose network), then served.
set -eu
data=/var/lib/postgresql/data
bin=/usr/lib/postgresql/15/bin
if [ ! -f "$data/PG_VERSION" ]; then
  pw=$(mktemp); printf '%s\n' "$POSTGRES_PASSWORD" >"$pw"
  "$bin/initdb" -D "$data" -U postgres --pwfile="$pw" --auth-local=peer --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8
  rm -f "$pw"
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$data/pg_hba.conf"
  "$bin/pg_ctl" -D "$data" -o "-c listen_addresses='' -c unix_socket_directories=/tmp" -w start
  "$bin/psql" -h /tmp -U postgres -v ON_ERROR_STOP=1 -v pw="$POSTGRES_PASSWORD" <<'SQL'
CREATE ROLE idp LOGIN PASSWORD :'pw';
CREATE DATABASE idp OWNER idp;
SQL
  "$bin/pg_ctl" -D "$data" -w stop
fi
exec "$bin/postgres" -D "$data" -c listen_addresses='*' -c unix_socket_directories=/tmp
