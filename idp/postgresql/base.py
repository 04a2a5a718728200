"""Django's PostgreSQL backend with a health check that costs no round trip when the connection
is idle and quiet.

With ``CONN_HEALTH_CHECKS`` Django checks a reused connection at the start of each request with
``SELECT 1``: a round trip on every request, about as much CPU as a short query. A server that
ends a session (a restart, ``idle_session_timeout``, ``pg_terminate_backend``) sends its last
message and closes the socket, which then polls readable. So an idle connection whose socket has
nothing to read is usable as it is; anything to read (that, a notification, an EOF) is left to
``SELECT 1``, which reads it and tells. A peer that vanished without a word is found by neither
check before its timeout, so the poll gives up nothing the query found.
"""
import select

from django.db.backends.postgresql.base import DatabaseWrapper as PostgreSQLDatabaseWrapper
from psycopg.pq import ConnStatus, TransactionStatus


class DatabaseWrapper(PostgreSQLDatabaseWrapper):
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
