"""PATCH (RFC 7644 §3.5.2) on a resource's SCIM document: add, replace and remove, with or
without a path, paths into complex and multi-valued attributes and value filters
(``members[value eq "id"]``). The patched document is then written like a PUT, so there is one
way a resource is changed."""
import copy

from . import filters
from .errors import ScimError
from .schemas import canonical_names


def _key(doc, name):
    """The key of ``doc`` that is ``name`` without regard to case, else ``name``."""
    return next((k for k in doc if k.lower() == name.lower()), name)


def _coerce(attribute, value):
    # Azure AD sends booleans as the strings "True"/"False".
    if attribute and attribute["type"] == "boolean" and isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value


def _definition(attributes, name, where):
    attribute = canonical_names(attributes).get(name.lower())
    if attribute is None:
        raise ScimError(400, f"No such attribute: {where}", "invalidPath")
    if attribute["mutability"] == "readOnly":
        raise ScimError(400, f"Attribute {attribute['name']} is read-only", "mutability")
    return attribute


def _sub_value(attribute, sub, value):
    definition = canonical_names(attribute.get("subAttributes", [])).get(sub)
    if definition is None:
        raise ScimError(400, f"No such attribute: {attribute['name']}.{sub}", "invalidPath")
    return definition["name"], _coerce(definition, value)


def _items(value):
    return value if isinstance(value, list) else [value]


def _merge_values(current, new):
    """``add`` to a multi-valued attribute: new values appended, a value already there kept once."""
    out = list(current or [])
    for item in new:
        if item not in out and not (isinstance(item, dict) and any(
                isinstance(o, dict) and o.get("value") is not None and o.get("value") == item.get("value")
                for o in out)):
            out.append(item)
    return out


def _apply(doc, attributes, op, path, value):
    name, value_filter, sub = filters.parse_path(path)
    attribute = _definition(attributes, name, path)
    key = _key(doc, attribute["name"])
    current = doc.get(key)
    if attribute["multiValued"]:
        items = list(current or [])
        if value_filter is None and sub is None:
            if op == "remove":
                doc.pop(key, None)
            elif op == "add":
                doc[key] = _merge_values(items, _items(value))
            else:
                doc[key] = _items(value)
            return
        chosen = [i for i, item in enumerate(items) if value_filter is None or filters.matches(value_filter, item)]
        if value_filter is not None and not chosen:
            if op == "add":
                raise ScimError(400, f"No value matches {path}", "invalidPath")
            if op == "replace":
                raise ScimError(400, f"No value matches {path}", "noTarget")
            return  # removing what is not there leaves nothing to do
        if sub is None:
            if op == "remove":
                doc[key] = [item for i, item in enumerate(items) if i not in chosen]
            else:
                for i in chosen:
                    items[i] = {**items[i], **value} if isinstance(value, dict) and isinstance(items[i], dict) else value
                doc[key] = items
            return
        sub_name, sub_value = _sub_value(attribute, sub, value)
        for i in chosen:
            item = dict(items[i]) if isinstance(items[i], dict) else {}
            if op == "remove":
                item.pop(_key(item, sub_name), None)
            else:
                item[_key(item, sub_name)] = sub_value
            items[i] = item
        doc[key] = items
        return
    if value_filter is not None:
        raise ScimError(400, f"{attribute['name']} is not multi-valued: {path}", "invalidPath")
    if attribute["type"] == "complex":
        node = dict(current or {})
        if sub is not None:
            sub_name, sub_value = _sub_value(attribute, sub, value)
            if op == "remove":
                node.pop(_key(node, sub_name), None)
            else:
                node[_key(node, sub_name)] = sub_value
        elif op == "remove":
            node = None
        elif not isinstance(value, dict):
            raise ScimError(400, f"{attribute['name']} takes an object", "invalidValue")
        else:
            node = {**node, **value} if op == "add" else dict(value)
        if node is None:
            doc.pop(key, None)
        else:
            doc[key] = node
        return
    if sub is not None:
        raise ScimError(400, f"{attribute['name']} has no sub-attributes: {path}", "invalidPath")
    if op == "remove":
        if attribute["required"]:
            raise ScimError(400, f"{attribute['name']} is required", "invalidValue")
        doc.pop(key, None)
    else:
        doc[key] = _coerce(attribute, value)


def apply(doc, operations, attributes, common=("externalId",)):
    """``doc`` patched by ``operations`` (a new document; ``doc`` is not changed)."""
    doc = copy.deepcopy(doc)
    if not isinstance(operations, list) or not operations:
        raise ScimError(400, "Operations must be a non-empty list", "invalidSyntax")
    everything = attributes + [{"name": n, "type": "string", "multiValued": False, "mutability": "readWrite",
                                "required": False} for n in common]
    for operation in operations:
        if not isinstance(operation, dict):
            raise ScimError(400, "Each operation is an object", "invalidSyntax")
        op = str(operation.get("op", "")).lower()
        if op not in ("add", "replace", "remove"):
            raise ScimError(400, f"Unknown op: {operation.get('op')!r}", "invalidSyntax")
        path, value = operation.get("path"), operation.get("value")
        try:
            if path:
                if op != "remove" and "value" not in operation:
                    raise ScimError(400, f"No value for {op} {path}", "invalidValue")
                _apply(doc, everything, op, path, value)
            elif op == "remove":
                raise ScimError(400, "remove needs a path", "noTarget")
            elif not isinstance(value, dict):
                raise ScimError(400, f"{op} without a path takes an object", "invalidValue")
            else:
                for name, item in value.items():
                    if name.lower().startswith("urn:") and isinstance(item, dict):
                        for inner, inner_value in item.items():  # an extension's attributes, by URN
                            _apply(doc, everything, op, inner, inner_value)
                    else:
                        _apply(doc, everything, op, name, item)
        except filters.FilterError as exc:
            raise ScimError(400, str(exc), "invalidPath") from None
    return doc
