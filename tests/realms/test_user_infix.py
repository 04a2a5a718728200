"""An infix match of a user field (``email=``, ``username=``, ``firstName=``, ``lastName=`` without
``exact``, and ``search=*term*``; docs/decisions/0041): the trigram index is asked only for the
value's trigrams that are infrequent in the column, the whole value is checked on the rows it
finds, and the users found are exactly those Django's ``icontains`` finds."""
import random

import pytest
from django.db import connection
from django.db.models import Q

from realms.data import user_queries
from realms.data.user_queries import contains, trigrams
from realms.models import User
from realms.users.accounts import create_user
from tests.realms.test_admin_rest_api import acme, master_api  # noqa: F401 (fixtures)
from tests.realms.test_user_query_indexes import SEARCHED, crowd, plans  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db

BENCH = {t: 1.0 for t in trigrams("user", padded=True) | trigrams("bench.test", padded=True) | {"er0"}}


@pytest.mark.postgresql
def test_a_value_has_the_trigrams_pg_trgm_finds_in_it():
    values = ["user0333333@bench.test", "Ann Archer", "o'neil_100%@x.example", "a", "ab", "x-1.y", "  spaced  out "]
    with connection.cursor() as cursor:
        for value in values:
            cursor.execute("SELECT show_trgm(%s)", [value])
            assert trigrams(value.lower(), padded=True) == set(cursor.fetchone()[0]), value


@pytest.mark.parametrize("value,windows", [
    # The bench's address: "user", "bench" and "test" are in every row; the number (and the blank
    # after it, where "@" ends the word) is what finds the row.
    ("user0333333@bench.test", ["r0333333@"]),
    ("USER0333333", ["r0333333"]),
    ("333@bench", ["333@"]),
    ("bench.test", []),  # every trigram is frequent: the plain match
    ("us", []),  # no trigram at all
    ("ann@corp.example", ["ann@corp.example"]),  # nothing frequent: the whole value
])
def test_the_index_is_asked_for_the_infrequent_parts_only(value, windows):
    assert user_queries._windows(value.lower(), BENCH) == windows


def test_every_window_is_a_substring_without_a_frequent_trigram():
    rng = random.Random(16)
    for _ in range(2000):
        value = "".join(rng.choice("ab1.@_ ") for _ in range(rng.randint(0, 16)))
        frequent = {t: 1.0 for t in sorted(trigrams(value)) if rng.random() < 0.3}
        for window in user_queries._windows(value, frequent):
            assert window in value and trigrams(window), (value, window)
            assert not frequent.keys() & trigrams(window), (value, frequent, window)


def test_no_statistics_no_sqlite_no_ascii_the_plain_match(monkeypatch):
    monkeypatch.setattr(user_queries, "_frequencies", lambda period: {})
    assert contains("email", "user0333333@bench.test") == Q(email__icontains="user0333333@bench.test")
    monkeypatch.setattr(user_queries, "_frequencies", lambda period: {"email": BENCH})
    assert contains("email", "zoë@bench.test") == Q(email__icontains="zoë@bench.test")
    # With statistics, an ASCII value asks the trigram index, which SQLite has not.
    assert (contains("email", "zoe@bench.test") != Q(email__icontains="zoe@bench.test")) == (
        connection.vendor == "postgresql")


@pytest.mark.postgresql
def test_the_statistics_find_the_frequent_trigrams(crowd):
    frequencies = user_queries._frequencies(0)
    assert set(frequencies) == set(SEARCHED)
    assert frequencies["email"]["bul"] > 0.9  # every bulk address is @bulk.test
    assert frequencies["email"].get("cor", 0) < 0.01  # ann and bob, among 3000


ODD = [("o'neil_100%", "o'neil_100%@x.example", "Zoë", "Ärger"), ("back\\slash", "b\\s@x.example", "Ann_e", "100%"),
       ("under_score", "u_s@x.example", "Ann%e", "O'Neil")]
VALUES = ["u01234@bulk.test", "01234@", "U0123", "bulk.test", "@bulk", "ann", "ANN@CORP", "corp.example", "o'neil",
          "_100%", "100%", "\\s", "_s@", "%", "_", "\\", "zoë", "ÄRG", "n_e", "n%e", "2999@b", "u", "", "nobody@nowhere"]


@pytest.mark.postgresql
@pytest.mark.parametrize("field", SEARCHED)
def test_the_users_found_are_those_icontains_finds(crowd, field):
    for username, email, first, last in ODD:
        create_user(crowd, username, email=email, first_name=first, last_name=last)
    users = User.objects.filter(realm=crowd)
    for value in VALUES:
        expected = set(users.filter(**{f"{field}__icontains": value}).values_list("username", flat=True))
        assert set(users.filter(contains(field, value)).values_list("username", flat=True)) == expected, value


@pytest.mark.postgresql
def test_an_address_reads_its_infrequent_trigrams_from_the_index(master_api, crowd):  # noqa: F811
    found, (page_plan,) = plans(master_api, crowd, "acme/users", email="u01234@bulk.test")
    assert [u["username"] for u in found] == ["u01234"]
    # "u01" is in a third of the addresses, "bulk" and "test" in all: the index is asked for the rest.
    assert "Index Cond: (upper((email)::text) ~~ '%01234@%'::text)" in page_plan, page_plan
    assert "strpos(upper((email)::text), 'U01234@BULK.TEST'::text) > 0" in page_plan, page_plan
    count, (count_plan,) = plans(master_api, crowd, "acme/users/count", email="u01234@bulk.test")
    assert count == 1
    assert "'%01234@%'" in count_plan, count_plan
    found, (page_plan,) = plans(master_api, crowd, "acme/users", search="*1234@bulk*")
    assert [u["username"] for u in found] == ["u01234"]
    assert "'%1234@%'" in page_plan, page_plan
