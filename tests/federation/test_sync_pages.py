"""The full sync reads the directory one page ahead of the database writes (``sync._ahead``):
the next page is fetched while the current one is written, a reader's error reaches the sync,
and a sync that stops early stops the reader."""
import threading

import pytest

from federation.ldap.connection import DirectoryUnavailable
from federation.ldap.sync import _ahead


def test_the_next_page_is_read_while_this_one_is_written():
    second_read = threading.Event()

    def pages():
        yield [0]
        second_read.set()
        yield [1]

    ahead = _ahead(pages())
    assert next(ahead) == [0]
    assert second_read.wait(5)  # read before this page's write has finished
    assert list(ahead) == [[1]]


def test_a_readers_error_reaches_the_sync_and_an_early_stop_ends_the_reader():
    def failing():
        yield [0]
        raise DirectoryUnavailable("gone")

    with pytest.raises(DirectoryUnavailable):
        list(_ahead(failing()))

    closed = threading.Event()

    def endless():
        try:
            while True:
                yield [1]
        finally:
            closed.set()

    ahead = _ahead(endless())
    assert next(ahead) == [1]
    ahead.close()  # the sync failed on this page
    assert closed.is_set()
