"""Django's PostgreSQL backend with a health check that costs no round trip when the connection
is idle and quiet.

With ``CONN_HEALTH_CHECKS`` Django checks a reused connection at the start of each request with
``SELECT 1``: a round trip on every request, about as much CPU as a short query. A server that
ends a session (a restart, ``idle_session_timeout``, ``pg_terminate_backend``) sends its last
message and closes the socket, which then polls readable. So an idle connection whose socket has
nothing to read is usable as it is; anything to read (that, a notification, an EOF) is left to
``SELECT 1``, which reads it and tells. A peer that vanished without a word is found by neither
check before its timeout, so the poll gives up nothing the query found.

Such a peer (a lost route: nothing answers, nothing is refused) would hold a statement forever,
so each waits for its answer at most ``SOCKET_TIMEOUT`` seconds (``IDP_DB_SOCKET_TIMEOUT``,
decision 0108), as JDBC's ``socketTimeout``; the connection is then dropped and the request fails
with an OperationalError, which is answered 503.
"""
import select

import psycopg
from django.db.backends.postgresql.base import DatabaseWrapper as PostgreSQLDatabaseWrapper
from psycopg.pq import ConnStatus, TransactionStatus


class Connection(psycopg.Connection):
    socket_timeout = None

    def wait(self, gen, *args, **kwargs):
        if self.socket_timeout is None or kwargs.get("timeout") is not None or len(args) > 1:
            return super().wait(gen, *args, **kwargs)  # psycopg's own bounded waits (a cancel)
        try:
            return super().wait(gen, *args, timeout=self.socket_timeout, **kwargs)
        except psycopg.errors.OperationalError as exc:
            if type(exc).__name__ != "_WaitTimeout":  # psycopg's private "timeout expired"
                raise
            # Mid-statement: the connection is in an unknown state. finish(), not close(), which
            # waits for the lock this statement holds.
            self.pgconn.finish()
            raise psycopg.OperationalError(
                f"no answer from the database within {self.socket_timeout:g} s (IDP_DB_SOCKET_TIMEOUT)") from None


class DatabaseWrapper(PostgreSQLDatabaseWrapper):
    def get_connection_params(self):
        params = super().get_connection_params()
        # libpq waits for a connection without a limit unless told: with a lost route the
        # readiness check and each request's new connection would hang. IDP_DB_URL may set it.
        params.setdefault("connect_timeout", 5)
        return params

    def get_new_connection(self, conn_params):
        connection = super().get_new_connection(conn_params)
        # Django connects through psycopg.connect(), which makes no subclass: the class is
        # swapped (same layout) to bound each statement's wait.
        connection.__class__ = Connection
        connection.socket_timeout = self.settings_dict.get("SOCKET_TIMEOUT") or None
        return connection

    def is_usable(self):
        conn = self.connection
        if conn is None or conn.closed:
            return False
        pgconn = conn.pgconn
        if pgconn.status == ConnStatus.OK and pgconn.transaction_status == TransactionStatus.IDLE:
            poller = select.poll()  # not select(): a descriptor may be past FD_SETSIZE
            poller.register(pgconn.socket, select.POLLIN)
            if not poller.poll(0):
                return True
        return super().is_usable()
