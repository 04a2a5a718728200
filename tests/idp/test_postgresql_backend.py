"""The production database backend (idp.postgresql) against a real PostgreSQL: its health check
costs no round trip on a quiet idle connection, and still finds a connection the server ended and
reads what the server sent meanwhile. What goes over the wire is read from libpq's own trace."""
import select
import time

import pytest
from django.db import connection, connections

from bench.libpq_trace import libpq_trace

pytestmark = [pytest.mark.django_db, pytest.mark.postgresql]


@pytest.fixture
def wrapper():
    """A second connection of its own (the test's own stays in its transaction), traced."""
    other = connections.create_connection("default")
    other.ensure_connection()
    assert type(other).__module__ == "idp.postgresql.base" and other.health_check_enabled
    other.health_check_done = False  # as at the end of a request: the next one checks
    with libpq_trace(other.connection.pgconn) as sent:
        yield other, sent
    other.close()


def _until_readable(wrapper):
    poller = select.poll()
    poller.register(wrapper.connection.pgconn.socket, select.POLLIN)
    deadline = time.monotonic() + 10
    while not poller.poll(50):
        assert time.monotonic() < deadline, "the server sent nothing"


def test_quiet_idle_connection_is_checked_without_a_round_trip(wrapper):
    other, sent = wrapper
    other.close_if_health_check_failed()
    assert other.connection is not None and other.health_check_done
    assert other.is_usable()
    assert sent() == ""


def test_connection_the_server_ended_is_closed_and_replaced(wrapper):
    other, sent = wrapper
    pid = other.connection.info.backend_pid
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    _until_readable(other)
    other.connection.pgconn.untrace()
    other.close_if_health_check_failed()
    assert other.connection is None
    with other.cursor() as cursor:  # a new connection, to a new backend
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != pid


def test_anything_to_read_is_left_to_the_query(wrapper):
    other, sent = wrapper
    other.connection.autocommit = True
    other.connection.execute("LISTEN idp_health_check_test")
    sent_before = sent()
    notifier = connections.create_connection("default")  # autocommit: the notice goes out now
    try:
        with notifier.cursor() as cursor:
            cursor.execute("NOTIFY idp_health_check_test")
    finally:
        notifier.close()
    _until_readable(other)
    assert other.is_usable()
    assert "SELECT 1" in sent()[len(sent_before):]


def test_inside_a_transaction_the_check_asks_the_server(wrapper):
    """A quiet socket says nothing of a transaction's state (an aborted one answers every query
    with an error): there the check is Django's own ``SELECT 1``."""
    other, sent = wrapper
    with other.cursor() as cursor:
        cursor.execute("BEGIN")
        cursor.execute("SELECT 1 WHERE false")
    before = sent()
    assert other.is_usable()
    assert "SELECT 1" in sent()[len(before):]
    with other.cursor() as cursor:
        cursor.execute("ROLLBACK")
