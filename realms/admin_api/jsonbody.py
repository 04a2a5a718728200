"""JSON bodies for every API resource, read with a nesting limit (no Django needed: fuzz targets
import ``loads`` directly).

Python's ``json`` recurses once per ``[`` or ``{``: 100,000 of them raise RecursionError (a 500)
after burning the stack. The body is checked for depth first, in one pass without recursion, so
a deep document is a 400 like any other body that cannot be parsed."""
import json
import re

# Keycloak's representations nest a handful of levels (a realm export about ten); a generous bound.
MAX_DEPTH = 64


# A string (skipped whole, so brackets inside it do not count) or one bracket.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def check_depth(text, limit=MAX_DEPTH):
    """ValueError when arrays and objects nest deeper than ``limit``."""
    depth = 0
    for match in _TOKENS.finditer(text):
        char = match.group()
        if char in "[{":
            depth += 1
            if depth > limit:
                raise ValueError(f"JSON nested deeper than {limit} levels")
        elif char in "]}":
            depth -= 1


def loads(raw):
    """The JSON document in ``raw`` (bytes or str); ValueError when it is not one or too deep."""
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    check_depth(text)
    return json.loads(text)
