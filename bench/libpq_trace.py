"""What a connection sends to PostgreSQL, read from libpq's own trace, for the benchmarks and the
tests: Django's query log lists a BEGIN and COMMIT that were never sent, and nothing of a health
check."""
import re
import tempfile
from contextlib import contextmanager

from psycopg.pq import Trace


@contextmanager
def libpq_trace(pgconn):
    """Trace ``pgconn`` for the block; yields ``text()``, the trace so far."""
    with tempfile.TemporaryFile("w+") as trace:
        pgconn.trace(trace.fileno())
        pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS)

        def text():
            trace.flush()
            trace.seek(0)
            return trace.read()

        try:
            yield text
        finally:
            if pgconn.pgconn_ptr is not None:  # not closed meanwhile
                pgconn.untrace()


def queries(text):
    """The query strings a trace shows sent, each one round trip. A query's text runs on over its
    newlines, to the next message (F: sent, B: received)."""
    return re.findall(r'^F\t\d+\tQuery\t "(.*?)"\n(?=[FB]\t|\Z)', text, re.S | re.M)
