"""Races for single-use rules: one call made by several threads released at the same moment."""
import threading
from concurrent.futures import ThreadPoolExecutor

from django.db import connection


def all_at_once(workers, call):
    """``call()``'s results in ``workers`` threads released together, each on its own database
    connection (closed after), so each sees committed data only."""
    barrier = threading.Barrier(workers)

    def one(_):
        try:
            barrier.wait(10)
            return call()
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, range(workers)))
