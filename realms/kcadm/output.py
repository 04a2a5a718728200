"""What the admin CLI reads from the command line and writes back: ``-s path=value`` edits,
``--fields`` selections, and output as Keycloak's CLI prints it (Jackson's pretty printer, compact
JSON, or CSV)."""
import json
import re

from .client import CliError

_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def parse_value(text):
    """``true``, ``5``, ``["a"]`` and ``{"k": 1}`` are JSON; anything else is a string, as
    ``kcadm.sh`` reads ``-s`` values."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value


def _path(name):
    steps, end = [], 0
    for match in _STEP.finditer(name):
        if match.start() != end and name[end:match.start()] != ".":
            raise CliError(f"Invalid attribute name: {name}")
        steps.append(match.group(1) if match.group(1) is not None else int(match.group(2)))
        end = match.end()
    if not steps or end != len(name):
        raise CliError(f"Invalid attribute name: {name}")
    return steps


def set_attribute(target, assignment):
    """Applies ``a.b[0].c=value`` to ``target`` (a dict), making the containers on the way."""
    name, sep, raw = assignment.partition("=")
    if not sep or not name:
        raise CliError(f"Invalid -s argument (expected name=value): {assignment}")
    steps, node = _path(name), target
    for step, following in zip(steps, steps[1:] + [None]):
        fresh = [] if isinstance(following, int) else {}
        if isinstance(step, int):
            if not isinstance(node, list):
                raise CliError(f"Attribute is not an array: {name}")
            while len(node) <= step:
                node.append(None)
            if following is None:
                node[step] = parse_value(raw)
            elif not isinstance(node[step], (dict, list)):
                node[step] = fresh
            node = node[step]
        else:
            if not isinstance(node, dict):
                raise CliError(f"Attribute is not an object: {name}")
            if following is None:
                node[step] = parse_value(raw)
            elif not isinstance(node.get(step), (dict, list)):
                node[step] = fresh
            node = node[step]
    return target


def merge(base, changes):
    """``update`` without ``--no-merge``: objects merge key by key, everything else is replaced."""
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value
    return base


def parse_fields(spec):
    """``id,username,attributes(dept,site)`` -> {"id": None, "username": None, "attributes": {...}}."""
    fields, stack, name = {}, [], ""
    current = fields
    for char in spec + ",":
        if char in ",()":
            name = name.strip()
            if char == "(":
                if not name:
                    raise CliError(f"Invalid --fields: {spec}")
                current[name] = {}
                stack.append(current)
                current = current[name]
            elif name:
                current[name] = None
            if char == ")":
                if not stack:
                    raise CliError(f"Invalid --fields: {spec}")
                current = stack.pop()
            name = ""
        else:
            name += char
    if stack:
        raise CliError(f"Invalid --fields: {spec}")
    return fields


def select(value, fields):
    if fields is None:
        return value
    if isinstance(value, list):
        return [select(item, fields) for item in value]
    if not isinstance(value, dict):
        return value
    if "*" in fields:
        return value
    return {key: select(value[key], sub) for key, sub in fields.items() if key in value}


def pretty(value, indent=0):
    """JSON as Keycloak's CLI prints it (Jackson's default pretty printer): objects one member a
    line as ``"key" : value``, arrays inline as ``[ a, b ]``."""
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return "{ }"
        inner = ",\n".join(f'{pad}  {json.dumps(k, ensure_ascii=False)} : {pretty(v, indent + 1)}'
                           for k, v in value.items())
        return "{\n" + inner + "\n" + pad + "}"
    if isinstance(value, list):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(pretty(v, indent) for v in value) + " ]"
    return json.dumps(value, ensure_ascii=False)


def _leaves(value, prefix=""):
    if isinstance(value, dict):
        for key, sub in value.items():
            yield from _leaves(sub, f"{prefix}{key}." if isinstance(sub, dict) else f"{prefix}{key}")
    else:
        yield prefix.rstrip("."), value


def as_csv(value, *, quotes=True, header=False):
    """One line a resource, its leaf values in order; quoted as CSV unless ``--noquotes``."""
    def cell(text):
        return '"' + text.replace('"', '""') + '"' if quotes else text

    lines = []
    for index, row in enumerate(value if isinstance(value, list) else [value]):
        cells = list(_leaves(row)) if isinstance(row, dict) else [("", row)]
        if header and index == 0:
            lines.append(",".join(cell(name) for name, _ in cells))
        lines.append(",".join(cell("" if v is None else v if isinstance(v, str) else json.dumps(v, ensure_ascii=False))
                              for _, v in cells))
    return "\n".join(lines)
