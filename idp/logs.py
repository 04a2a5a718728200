"""Access-log lines without secrets.

Query strings carry ``id_token_hint`` (logout), ``login_hint``, SAML messages and, in a
referrer, authorization codes: an access log is read by more people than the database. Every
query value is logged as ``REDACTED`` unless its parameter is in ``SHOWN`` (names are kept, so a
log still tells which request it was): the development server's ``django.server`` lines go
through ``RedactQueryFilter``. (Production's access log, Granian's, has no query or referrer.)
"""
import logging
from urllib.parse import parse_qsl, quote

SHOWN = frozenset({"client_id", "response_type", "response_mode", "scope", "prompt", "tab", "execution",
                   "ui_locales", "kc_locale", "realm__id__exact"})


def redact_target(target):
    """``/path?a=1&b=2`` with every value not in SHOWN replaced."""
    path, sep, query = target.partition("?")
    if not sep:
        return target
    pairs = [f"{quote(name, safe='')}={quote(value, safe='') if name in SHOWN else 'REDACTED'}"
             for name, value in parse_qsl(query, keep_blank_values=True)]
    return f"{path}?{'&'.join(pairs)}"


def redact_request_line(line):
    """``GET /path?query HTTP/1.1`` with its query redacted."""
    method, sep, rest = line.partition(" ")
    target, sep2, version = rest.rpartition(" ")
    if not sep or not sep2:
        return redact_target(line)
    return f"{method} {redact_target(target)} {version}"


class RedactQueryFilter(logging.Filter):
    """For ``django.server``: its request lines are logged as ``'"%s" %s %s', request_line, ...``."""

    def filter(self, record):
        if isinstance(record.args, tuple) and record.args and isinstance(record.args[0], str):
            record.args = (redact_request_line(record.args[0]), *record.args[1:])
        return True
