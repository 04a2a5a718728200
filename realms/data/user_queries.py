"""What the user table's PostgreSQL objects (migrations 0011 and 0014, decision 0041) offer the
user queries: the count of a realm's listed users without counting them, and an infix match that
asks the trigram index only for the pattern's infrequent trigrams. SQLite (development) counts and
matches plainly; the answers are the same."""
import operator
import re
from functools import lru_cache, reduce
from time import monotonic

from django.db import connection
from django.db.models import Q, Value
from django.db.models.functions import StrIndex, Upper
from django.db.models.lookups import GreaterThan

from ..models import User

# A trigram found in more than this share of a column's values stays out of the index condition:
# its posting list (a fifth of the table or more) costs more to read than rechecking the rows the
# value's other trigrams leave.
FREQUENT = 0.2
# How long a process keeps the statistics it read (ANALYZE refreshes them far less often).
STATISTICS_SECONDS = 600
_WORD = re.compile(r"[^\W_]+")  # pg_trgm's words: runs of letters and digits


def listed_count(realm):
    """The number of the realm's users who are not service accounts: the Admin API's whole listing."""
    if connection.vendor != "postgresql":
        return User.objects.filter(realm=realm, service_account_client__isnull=True).count()
    with connection.cursor() as cursor:
        cursor.execute("SELECT COALESCE(SUM(listed), 0)::bigint FROM realms_user_tally WHERE realm_id = %s", [realm.pk])
        return cursor.fetchone()[0]


def contains(field, value):
    """``field`` contains ``value``, ignoring case (Django's ``icontains``), as a ``Q``.

    On PostgreSQL, the trigram index is asked only for substrings of ``value`` whose trigrams are
    infrequent in the column (ANALYZE's sample of it), and ``strpos`` (which no index serves)
    checks the whole value on the rows found: with the frequent trigrams in the index condition
    (the "bench", "test" and "user" of every address) the index read most of its posting lists.
    Only ASCII values: upper-casing them is the same character by character under any collation,
    so a row containing the value contains each of its substrings."""
    plain = Q(**{f"{field}__icontains": value})
    if connection.vendor != "postgresql" or not value.isascii():
        return plain
    frequencies = _frequencies(int(monotonic() // STATISTICS_SECONDS)).get(field)
    windows = _windows(value.lower(), frequencies) if frequencies is not None else []
    if not windows:
        return plain
    whole = GreaterThan(StrIndex(Upper(field), Upper(Value(value))), 0)
    return reduce(operator.and_, (Q(**{f"{field}__icontains": w}) for w in windows), Q(whole))


def trigrams(text, padded=False):
    """The trigrams pg_trgm reads in ``text`` (lowercase): each word with two blanks before and
    one after where a word boundary is. In a value (``padded``) the ends are boundaries; in a
    ``LIKE '%text%'`` pattern they are wildcards, which add no blank."""
    if padded:
        text = f" {text} "
    found = set()
    for word in _WORD.finditer(text):
        start, end = word.start(), word.end()
        padded_word = ("  " if start > 0 else "") + word.group() + (" " if end < len(text) else "")
        found.update(padded_word[i:i + 3] for i in range(len(padded_word) - 2))
    return found


def _windows(text, frequencies):
    """The substrings of ``text`` (lowercase) to ask the index for: each infrequent trigram's
    shortest substring (a boundary character included for a blank), joined where they meet and
    the joined one has no frequent trigram either. Empty when every trigram is frequent."""
    def frequent(part):
        return any(frequencies.get(t, 0.0) > FREQUENT for t in trigrams(part))

    spans = []
    for word in _WORD.finditer(text):
        start, end = word.start(), word.end()
        left = 2 if start > 0 else 0  # the blanks that pad the word
        padded_len = left + (end - start) + (1 if end < len(text) else 0)
        for i in range(padded_len - 2):
            span = (max(start + i - left, start - 1), min(start + i - left + 3, end + 1))
            if not frequent(text[span[0]:span[1]]):
                spans.append(span)
    windows = []
    for start, end in sorted(spans):
        if windows and start <= windows[-1][1]:
            first, last = windows[-1]
            # Joined, two windows gain only trigrams across ``last``, within three characters of it.
            if not frequent(text[max(first, last - 3):min(max(end, last), last + 3)]):
                windows[-1] = (first, max(end, last))
                continue
        windows.append((start, end))
    return list(dict.fromkeys(text[a:b] for a, b in windows))


_SEARCHED = ("username", "email", "first_name", "last_name")


@lru_cache(maxsize=1)
def _frequencies(period):
    """For each searched column, the share of its values holding each trigram, from the
    statistics ANALYZE keeps of the column's btree index (``period``: the cache's time slot).
    The most common values count with their frequency, the rest through the histogram's bounds
    (a sample of them at evenly spaced ranks). No statistics yet (never analyzed): no entry."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename, null_frac, most_common_vals::text::text[], most_common_freqs,"
            " histogram_bounds::text::text[] FROM pg_stats WHERE schemaname = current_schema() AND tablename = ANY(%s)",
            [[f"realms_user_{col}_upper_idx" for col in _SEARCHED]])
        rows = cursor.fetchall()
    found = {}
    for index, null_frac, common, common_freqs, bounds in rows:
        share = {}
        for value, freq in zip(common or [], common_freqs or []):
            for t in trigrams(value.lower(), padded=True):
                share[t] = share.get(t, 0.0) + freq
        if bounds:
            rest = (1.0 - null_frac - sum(common_freqs or [])) / len(bounds)
            for value in bounds:
                for t in trigrams(value.lower(), padded=True):
                    share[t] = share.get(t, 0.0) + rest
        found[index[len("realms_user_"):-len("_upper_idx")]] = share
    return found
