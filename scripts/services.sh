# Starts throw-away PostgreSQL and Redis servers on loopback free ports for tests and benchmarks.
# Source it, then call services_start; services_stop tears everything down.
# Exports IDP_TEST_DB_URL and IDP_TEST_REDIS_URL.

_free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

services_start() {
  SERVICES_DIR=$(mktemp -d /tmp/idp-services.XXXXXX)
  chmod 755 "$SERVICES_DIR"
  local pgbin; pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
  local pgport; pgport=$(_free_port)
  local run=(); [ "$(id -u)" = 0 ] && run=(runuser -u postgres --)
  mkdir -p "$SERVICES_DIR/pg"; [ "$(id -u)" = 0 ] && chown postgres "$SERVICES_DIR/pg"
  # C.UTF-8 exists on every Debian machine; the caller's LANG (en_US.UTF-8 on a fresh machine that
  # never generated it) may not, and initdb aborts on a locale that does not exist. From /: the
  # postgres user may not enter the caller's directory (root's home).
  run+=(env -C / LC_ALL=C.UTF-8 LANG=C.UTF-8)
  "${run[@]}" "$pgbin/initdb" -D "$SERVICES_DIR/pg/data" -U idp --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
  "${run[@]}" "$pgbin/pg_ctl" -D "$SERVICES_DIR/pg/data" -l "$SERVICES_DIR/pg/log" -w -o \
    "-c listen_addresses=127.0.0.1 -p $pgport -k $SERVICES_DIR/pg -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" start >/dev/null
  SERVICES_PG=("${run[@]}" "$pgbin/pg_ctl" -D "$SERVICES_DIR/pg/data" -m immediate stop)
  export IDP_TEST_DB_URL="postgresql://idp@127.0.0.1:$pgport/postgres"

  local rport; rport=$(_free_port)
  redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
    --pidfile "$SERVICES_DIR/redis.pid" --logfile "$SERVICES_DIR/redis.log" >/dev/null
  export IDP_TEST_REDIS_URL="redis://127.0.0.1:$rport/0"
  echo "services: PostgreSQL on 127.0.0.1:$pgport, Redis on 127.0.0.1:$rport"
}

services_stop() {
  [ -n "${SERVICES_DIR:-}" ] || return 0
  "${SERVICES_PG[@]}" >/dev/null 2>&1 || true
  [ -f "$SERVICES_DIR/redis.pid" ] && kill "$(cat "$SERVICES_DIR/redis.pid")" 2>/dev/null || true
  rm -rf "$SERVICES_DIR"
}
