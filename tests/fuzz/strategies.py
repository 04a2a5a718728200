"""Hypothesis strategies that make fuzz inputs from a target's seeds: the seeds' bytes mutated
(splices of tokens that parsers trip on), their documents' values replaced (JSON or YAML, for the
targets whose input is one), and plain random bytes."""
import copy
import json

from hypothesis import strategies as st

# Tokens that have broken parsers of this kind: encodings, separators, markup, framing, numbers.
TOKENS = [
    b"%2e%2e/", b"%2E%2e%2f", b"%5c", b"%00", b"%", b"%zz", b"+", b"&", b"=", b"&&==", b"\x00", b"\r\n", b"\n",
    b"\xff\xfe", b"\xed\xa0\x80", b"\xc3\x28", b"<", b">", b"/>", b"]]>", b"<![CDATA[", b"<!DOCTYPE x>",
    b"<!ENTITY", b"&amp;", b"&#0;", b"xmlns:a=\"\"", b"\"", b"'", b"{", b"}", b"[", b"]", b"[[[[[[[[", b"null",
    b"true", b"1e999", b"NaN", b"-1", b"0", b"9" * 40, b"-0.0", b"Basic ", b"Bearer ", b"*", b"..", b"@NOW@",
    b"@ID@", b"eyJhbGciOiJub25lIn0", b"Transfer-Encoding: chunked\r\n", b"Content-Length: 99999999999\r\n",
    b"Connection: close\r\n", b"HTTP/1.0", b" HTTP/1.1\r\n", b"0\r\n\r\n", b"&a", b"*a", b"!!python/object:os.system",
    b"---\n", b": ", b"- ", b"\t",
]

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.sampled_from([0, -1, 1, 2**31, 2**63, 10**30, -(10**30)])
    | st.integers() | st.floats() | st.text(max_size=40)
    | st.sampled_from(["", "*", "https://example.com/x", "http://127.0.0.1/", "2026-01-01T00:00:00Z", "v1a", "S256"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=10,
)


@st.composite
def byte_mutants(draw, seeds):
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        end = min(len(data), at + draw(st.integers(0, 16)))
        op = draw(st.sampled_from(("insert", "replace", "delete", "repeat")))
        piece = draw(st.sampled_from(TOKENS) | st.binary(min_size=1, max_size=8))
        if op == "insert":
            data[at:at] = piece
        elif op == "replace":
            data[at:end] = piece
        elif op == "delete":
            del data[at:end]
        else:
            data[at:at] = bytes(data[at:end]) * draw(st.integers(2, 50))
    return bytes(data)


def _slots(node, out):
    """(container, key) for every value inside ``node``."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        out.append((node, key))
        _slots(value, out)
    return out


def _keys(node, out):
    if isinstance(node, dict):
        out.update(k for k in node if isinstance(k, str))
    for value in node.values() if isinstance(node, dict) else node if isinstance(node, list) else ():
        _keys(value, out)
    return out


def document_mutants(seeds, offset, loader):
    """A seed's document with some values replaced, removed or added (keys taken from all seeds)."""
    documents = []
    for seed in seeds:
        try:
            document = loader(seed[offset:])
            json.dumps(document, default=str)  # not a cycle (a YAML alias inside itself)
        except Exception:  # noqa: BLE001 - a seed that is not a document only feeds the byte mutations
            continue
        documents.append((seed[:offset], document))
    vocabulary = sorted(set().union(*(_keys(d, set()) for _, d in documents)))
    return _document_mutant(documents, vocabulary)


@st.composite
def _document_mutant(draw, documents, vocabulary):
    prefix, document = draw(st.sampled_from(documents))
    document = copy.deepcopy(document)
    for _ in range(draw(st.integers(1, 3))):
        slots = _slots(document, [])
        if not slots:
            document = draw(JSON_VALUES)
            continue
        container, key = draw(st.sampled_from(slots))
        op = draw(st.sampled_from(("replace", "replace", "delete", "add")))
        if op == "replace":
            container[key] = draw(JSON_VALUES)
        elif op == "delete":
            del container[key]
        elif isinstance(container, dict) and vocabulary:
            container[draw(st.sampled_from(vocabulary))] = draw(JSON_VALUES)
        elif isinstance(container, list):
            container.append(draw(JSON_VALUES))
    return prefix + json.dumps(document, default=str).encode()  # JSON is YAML too


def inputs(target):
    seeds = target.seeds()
    choices = [byte_mutants(seeds), st.binary(max_size=1024)]
    if target.document is not None:
        choices.insert(0, document_mutants(seeds, *target.document))
    return st.one_of(choices)
