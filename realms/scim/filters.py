"""SCIM filters (RFC 7644 §3.4.2.2) and PATCH paths (§3.5.2): one parser, two uses.

A filter becomes a tree of ``Compare``/``Present``/``And``/``Or``/``Not``/``ValuePath`` nodes.
``to_q`` turns the tree into a Django ``Q`` over a resource's attribute map (so the database
filters, sorts and pages); ``matches`` evaluates it against one JSON value (the sub-filter of a
PATCH path such as ``members[value eq "id"]``). Attribute names are case-insensitive, as the RFC
says."""
import json
import re
from dataclasses import dataclass

from django.db.models import Q

from ..data.user_queries import contains
from ..errors import RealmsError

OPERATORS = ("eq", "ne", "co", "sw", "ew", "gt", "ge", "lt", "le")
_TOKEN = re.compile(r"""
    \s*(?:
      (?P<lparen>\() | (?P<rparen>\)) | (?P<lbracket>\[) | (?P<rbracket>\]) |
      (?P<string>"(?:[^"\\]|\\.)*") |
      (?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w:.]) ) |
      (?P<word>[A-Za-z$][\w$:.\-]*)
    )""", re.X)


class FilterError(RealmsError, ValueError):
    """Not a filter this server can apply: SCIM's ``invalidFilter`` (or ``invalidPath``)."""


@dataclass
class Compare:
    attr: str
    op: str
    value: object


@dataclass
class Present:
    attr: str


@dataclass
class And:
    left: object
    right: object


@dataclass
class Or:
    left: object
    right: object


@dataclass
class Not:
    inner: object


@dataclass
class ValuePath:
    """``emails[type eq "work"]``: the attribute and the filter its values must pass."""
    attr: str
    inner: object


def _tokens(text):
    tokens, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise FilterError(f"Unexpected character at position {pos} of the filter")
        kind = match.lastgroup
        raw = match.group(kind)
        tokens.append((kind, raw))
        pos = match.end()
    return tokens


class _Parser:
    def __init__(self, text):
        self.tokens = _tokens(text)
        self.pos = 0

    def peek(self, offset=0):
        index = self.pos + offset
        return self.tokens[index] if index < len(self.tokens) else (None, None)

    def take(self, kind=None):
        token = self.peek()
        if token[0] is None or (kind and token[0] != kind):
            raise FilterError("Incomplete or malformed filter")
        self.pos += 1
        return token

    def word_is(self, *words, offset=0):
        kind, raw = self.peek(offset)
        return kind == "word" and raw.lower() in words

    def parse(self):
        node = self.expression()
        if self.peek()[0] is not None:
            raise FilterError(f"Unexpected '{self.peek()[1]}' in the filter")
        return node

    def expression(self):
        node = self.term()
        while self.word_is("or"):
            self.take()
            node = Or(node, self.term())
        return node

    def term(self):
        node = self.factor()
        while self.word_is("and"):
            self.take()
            node = And(node, self.factor())
        return node

    def factor(self):
        if self.word_is("not") and self.peek(1)[0] == "lparen":
            self.take()
            return Not(self.factor())
        if self.peek()[0] == "lparen":
            self.take()
            node = self.expression()
            self.take("rparen")
            return node
        return self.comparison()

    def comparison(self):
        _, attr = self.take("word")
        if self.peek()[0] == "lbracket":
            self.take()
            inner = self.expression()
            self.take("rbracket")
            return ValuePath(attr, inner)
        kind, op = self.take("word")
        op = op.lower()
        if op == "pr":
            return Present(attr)
        if op not in OPERATORS:
            raise FilterError(f"Unknown operator '{op}'")
        return Compare(attr, op, self.value())

    def value(self):
        kind, raw = self.take()
        if kind == "string":
            return json.loads(raw)
        if kind == "number":
            return float(raw) if any(c in raw for c in ".eE") else int(raw)
        if kind == "word" and raw.lower() in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[raw.lower()]
        raise FilterError(f"Expected a value, found '{raw}'")


def parse(text):
    if not text or not text.strip():
        raise FilterError("Empty filter")
    return _Parser(text).parse()


def parse_path(text):
    """A PATCH path: ``attr``, ``attr.sub``, ``attr[filter]`` or ``attr[filter].sub`` (the
    attribute lower-cased; the URN of a schema before it dropped). Returns (attr, filter, sub)."""
    text = (text or "").strip()
    urn = re.match(r"urn:[^\[\]]*:([A-Za-z$][\w$]*(?:\.[\w$]+)?)(.*)$", text)
    if urn:
        text = urn.group(1) + urn.group(2)
    match = re.fullmatch(r"([A-Za-z$][\w$]*)(?:\[(.*)\])?(?:\.([A-Za-z$][\w$]*))?", text, re.S)
    if not match:
        raise FilterError(f"Invalid path: {text}")
    attr, inner, sub = match.groups()
    if inner is None and sub is None and "." in text:
        attr, sub = text.split(".", 1)
    return attr.lower(), (parse(inner) if inner is not None else None), (sub.lower() if sub else None)


# -- the database -----------------------------------------------------------------------------

@dataclass
class Field:
    """How a SCIM attribute maps to a model: its lookup, its kind (``str`` compares without
    case unless ``case_exact``; ``bool``; ``datetime``), and whether it can be ordered."""
    lookup: str
    kind: str = "str"
    case_exact: bool = False


_STRING_LOOKUPS = {"eq": "exact", "co": "contains", "sw": "startswith", "ew": "endswith",
                   "gt": "gt", "ge": "gte", "lt": "lt", "le": "lte"}


def _compare_q(field, op, value):
    if op == "ne":
        return ~_compare_q(field, "eq", value) | Q(**{f"{field.lookup}__isnull": True})
    if value is None:
        return Q(**{f"{field.lookup}__isnull": op == "eq"})
    if field.kind == "bool":
        if op != "eq" or not isinstance(value, bool):
            raise FilterError("A boolean attribute is compared with eq true or eq false only")
        return Q(**{field.lookup: value})
    if field.kind == "str" and not isinstance(value, str):
        raise FilterError("A string attribute is compared with a string")
    lookup = _STRING_LOOKUPS[op]
    if field.kind == "str" and not field.case_exact and lookup == "contains":
        return contains(field.lookup, value)  # icontains's rows, the user table's index asked well
    if field.kind == "str" and not field.case_exact and lookup in ("exact", "startswith", "endswith"):
        lookup = "i" + lookup
    return Q(**{f"{field.lookup}__{lookup}": value})


def to_q(node, fields, prefix=""):
    """``fields`` maps lower-cased attribute paths (``username``, ``name.familyname``,
    ``emails.value``) to ``Field``; an attribute not in it is an ``invalidFilter``."""
    if isinstance(node, And):
        return to_q(node.left, fields, prefix) & to_q(node.right, fields, prefix)
    if isinstance(node, Or):
        return to_q(node.left, fields, prefix) | to_q(node.right, fields, prefix)
    if isinstance(node, Not):
        return ~to_q(node.inner, fields, prefix)
    if isinstance(node, ValuePath):
        return to_q(node.inner, fields, prefix + attribute_name(node.attr) + ".")
    name = prefix + attribute_name(node.attr)
    field = fields.get(name) or fields.get(name + ".value")
    if field is None:
        raise FilterError(f"Filtering on '{node.attr}' is not supported")
    if isinstance(node, Present):
        if field.kind == "bool":
            return Q(**{f"{field.lookup}__isnull": False})
        return ~Q(**{f"{field.lookup}__isnull": True}) & ~Q(**{field.lookup: ""})
    return _compare_q(field, node.op, node.value)


def attribute_name(attr):
    """``urn:...:User:userName`` and ``userName`` alike, lower-cased."""
    if attr.lower().startswith("urn:"):
        attr = attr.rsplit(":", 1)[-1]
    return attr.lower()


# -- one JSON value (PATCH paths) ----------------------------------------------------------------

def _lookup(value, attr):
    if not isinstance(value, dict):
        return None
    for key, item in value.items():
        if key.lower() == attr:
            return item
    return None


def matches(node, value):
    if isinstance(node, And):
        return matches(node.left, value) and matches(node.right, value)
    if isinstance(node, Or):
        return matches(node.left, value) or matches(node.right, value)
    if isinstance(node, Not):
        return not matches(node.inner, value)
    if isinstance(node, ValuePath):
        items = _lookup(value, attribute_name(node.attr)) or []
        return any(matches(node.inner, item) for item in (items if isinstance(items, list) else [items]))
    parts = attribute_name(node.attr).split(".")
    found = value
    for part in parts:
        found = _lookup(found, part)
    if isinstance(node, Present):
        return found not in (None, "", [], {})
    if isinstance(found, str) and isinstance(node.value, str):
        found, wanted = found.lower(), node.value.lower()
    else:
        wanted = node.value
    op = node.op
    try:
        return {
            "eq": lambda: found == wanted, "ne": lambda: found != wanted,
            "co": lambda: isinstance(found, str) and wanted in found,
            "sw": lambda: isinstance(found, str) and found.startswith(wanted),
            "ew": lambda: isinstance(found, str) and found.endswith(wanted),
            "gt": lambda: found is not None and found > wanted, "ge": lambda: found is not None and found >= wanted,
            "lt": lambda: found is not None and found < wanted, "le": lambda: found is not None and found <= wanted,
        }[op]()
    except TypeError:
        return False
