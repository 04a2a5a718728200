"""JSON Schemas (draft 2020-12) of every event type's body, for each payload kind, version and
envelope, and the AsyncAPI 3.0 document of the whole catalogue: all generated from the catalogue
(``webhooks.catalogue``) and the bodies' shapes (``webhooks.payloads``), so they cannot disagree
with what is sent. docs/asyncapi.json is a copy of ``asyncapi()``; a test keeps it current."""
from . import catalogue, payloads

DIALECT = "https://json-schema.org/draft/2020-12/schema"
_STR, _NULLABLE_STR = {"type": "string"}, {"type": ["string", "null"]}

_ADMIN_DATA = {"realm": _STR, "eventId": _STR, "resourceType": _STR, "resourcePath": _STR, "resourceId": _STR,
               "operationType": {"enum": list(catalogue.ADMIN_OPERATIONS)}}
_USER_DATA = {"realm": _STR, "eventId": _STR, "eventType": _STR, "clientId": _STR, "userId": _STR, "sessionId": _STR,
              "ipAddress": _STR, "error": _STR, "details": {"type": "object"}}
_TEST_DATA = {"realm": _STR, "endpointId": _STR}


def _family(event_type):
    """Which thin ``data`` an event type has: a test event's, a user event's or an admin event's."""
    if event_type == catalogue.TEST_EVENT_TYPE:
        return "test"
    return "user_event" if event_type.startswith("auth.") else "admin_event"


_THIN_DATA = {"test": (_TEST_DATA, list(_TEST_DATA)), "user_event": (_USER_DATA, ["realm", "eventId", "eventType"]),
              "admin_event": (_ADMIN_DATA, list(_ADMIN_DATA))}


def _data_schema(event_type, kind, version):
    properties, required = _THIN_DATA[_family(event_type)]
    schema = {"type": "object", "required": required, "properties": dict(properties), "additionalProperties": True}
    if kind == payloads.FAT:
        obj = catalogue.object_kind(event_type, version)
        # null: a deleted object, an event without a user, or a type with no object in this version.
        schema["properties"]["representation"] = {"anyOf": [obj.schema, {"type": "null"}]} if obj else {"type": "null"}
    return schema


def _descriptor(version):
    """The self-description of a fat body: ``payload`` fat, or thin with ``truncated`` when the
    snapshot was over the size limit (then ``data`` has no representation)."""
    return {"payload": {"enum": list(payloads.KINDS)}, "payloadVersion": {"const": version},
            "truncated": {"const": True}}


def body_schema(event_type, kind=payloads.THIN, version="", envelope=payloads.STANDARD, types=None):
    """The schema of ``event_type``'s bodies; with ``types`` (types whose bodies have the same
    ``data``, ``event_type`` one of them), of any of those types' bodies."""
    data = _data_schema(event_type, kind, version)
    descriptor = _descriptor(version) if kind == payloads.FAT else {}
    type_schema = {"enum": types} if types else {"const": event_type}
    title = f"{', '.join(types) if types else event_type} ({kind}{' ' + version if version else ''}, {envelope})"
    if envelope == payloads.CLOUDEVENTS:
        properties = {"specversion": {"const": "1.0"}, "id": _STR, "source": {"type": "string", "format": "uri-reference"},
                      "type": type_schema, "time": {"type": "string", "format": "date-time"},
                      "datacontenttype": {"const": payloads.JSON},
                      **{k.lower(): v for k, v in descriptor.items()}, "data": data}
        required = ["specversion", "id", "source", "type", "time", "datacontenttype", "data"]
    else:
        properties = {"type": type_schema, "timestamp": {"type": "string", "format": "date-time"},
                      **descriptor, "data": data}
        required = ["type", "timestamp", "data"]
    if descriptor:
        required += [k.lower() if envelope == payloads.CLOUDEVENTS else k for k in ("payload", "payloadVersion")]
    return {"$schema": DIALECT, "title": title, "type": "object", "required": required, "properties": properties,
            "additionalProperties": True}


def _variants():
    """(kind, version, envelope) of every body the catalogue can send."""
    kinds = [(payloads.THIN, "")] + [(payloads.FAT, v) for v in sorted(catalogue.VERSIONS)]
    return [(k, v, e) for k, v in kinds for e in payloads.ENVELOPES]


def event_types():
    """Each type with its description and, per payload version, the representation it carries."""
    out = []
    for event_type in catalogue.emitted_types():
        versions = {}
        for name in sorted(catalogue.VERSIONS):
            obj = catalogue.object_kind(event_type, name)
            versions[name] = {"representation": obj.name if obj else None}
        out.append({"name": event_type, "description": _description(event_type), "payloadVersions": versions})
    return out


def _description(event_type):
    resource, action = event_type.split(".", 1)
    if event_type == catalogue.TEST_EVENT_TYPE:
        return "A test event sent on request to one endpoint."
    if resource == "auth":
        return f"Keycloak user event {action.upper()}."
    return f"Keycloak admin event: {action} on a {resource.replace('_', ' ')}."


def _groups(kind, version):
    """Event types whose bodies of this kind and version have the same ``data``, by message name."""
    groups = {}
    for event_type in catalogue.emitted_types():
        obj = catalogue.object_kind(event_type, version) if kind == payloads.FAT else None
        key = "_".join(p for p in (_family(event_type), obj.name if obj else "", kind, version) if p)
        groups.setdefault(key, []).append(event_type)
    return groups


def asyncapi():
    """AsyncAPI 3.0: a channel per event type and the sender's ``send`` operation on it; a
    message per payload kind, version and envelope and group of types with the same ``data``,
    with its JSON Schema and headers."""
    headers = {"type": "object", "required": ["webhook-id", "webhook-timestamp", "webhook-signature"],
               "properties": {"webhook-id": _STR, "webhook-timestamp": _STR, "webhook-signature": _STR,
                              payloads.PAYLOAD_VERSION_HEADER: _STR}}
    messages, refs = {}, {t: {} for t in catalogue.emitted_types()}
    for kind, version, envelope in _variants():
        for group, types in _groups(kind, version).items():
            name = f"{group}_{envelope}"
            schema = body_schema(types[0], kind, version, envelope, types=types)
            messages[name] = {
                "name": name, "title": schema["title"],
                "contentType": payloads.headers(payloads.format_of(kind, version, envelope))["Content-Type"],
                "headers": headers,
                "payload": {"schemaFormat": "application/schema+json;version=draft-2020-12", "schema": schema}}
            for event_type in types:
                refs[event_type][name] = {"$ref": f"#/components/messages/{name}"}
    channels, operations = {}, {}
    for event_type, messages_of in refs.items():
        key = event_type.replace(".", "_")
        channels[key] = {"address": event_type, "description": _description(event_type), "messages": messages_of}
        operations[f"send_{key}"] = {"action": "send", "channel": {"$ref": f"#/channels/{key}"},
                                     "messages": [{"$ref": f"#/channels/{key}/messages/{m}"} for m in messages_of]}
    return {
        "asyncapi": "3.0.0",
        "info": {"title": "Identity provider webhooks", "version": catalogue.latest_version(),
                 "description": "Standard Webhooks POSTed to each endpoint's URL, signed in webhook-signature. "
                                "Thin payloads carry ids; fat ones the object of payload version "
                                "webhook-payload-version. See docs/webhooks.md."},
        "defaultContentType": payloads.JSON,
        "channels": channels, "operations": operations, "components": {"messages": messages},
    }
