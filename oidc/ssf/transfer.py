"""Streams in realm export and import, as Keycloak keeps them: in the receiver client's attributes
``ssf.streamId``, ``ssf.status``, ``ssf.status_reason`` and ``ssf.streamConfig`` (the stream
configuration's JSON, Keycloak's ``StreamConfig``), so a Keycloak export with a stream imports
here and ours imports there. Here the stream is a row (decision 0103): the export writes the
attributes from it, and an import turns them back into a stream and takes them off the client.
The added subjects ride in ``ssf.subjects`` (ours: Keycloak marks its users instead)."""
import json

from .models import SsfStream
from .streams import SsfRefused, representation, restore

STREAM_ID, STATUS, STATUS_REASON, CONFIG, SUBJECTS = (
    "ssf.streamId", "ssf.status", "ssf.status_reason", "ssf.streamConfig", "ssf.subjects")
STREAM_KEYS = (STREAM_ID, STATUS, STATUS_REASON, CONFIG, SUBJECTS)


def _json(value):
    return json.dumps(value, separators=(",", ":"))  # compact, as Keycloak writes the attribute


def export(realm):
    """{client id: its stream's attributes} of the realm's receivers with a stream."""
    out = {}
    for stream in SsfStream.objects.filter(realm=realm).select_related("client"):
        attributes = {STREAM_ID: stream.id, STATUS: stream.status, CONFIG: _json(representation(stream))}
        if stream.reason:
            attributes[STATUS_REASON] = stream.reason
        if stream.subjects:
            attributes[SUBJECTS] = _json(stream.subjects)
        out[stream.client_id] = attributes
    return out


def load(client):
    """The stream an imported client's attributes carry, made (with its webhook endpoint) in the
    import's transaction; the refusal's message if it cannot be, so the import changes nothing.
    A stream id without a configuration is no stream, as in Keycloak."""
    attributes = client.attributes or {}
    if not any(key in attributes for key in STREAM_KEYS):
        return None
    client.attributes = {k: v for k, v in attributes.items() if k not in STREAM_KEYS}
    client.save(update_fields=["attributes"])
    if CONFIG not in attributes:
        return None
    try:
        config = json.loads(attributes[CONFIG])
        subjects = json.loads(attributes.get(SUBJECTS) or "[]")
    except ValueError:
        return f"{CONFIG} and {SUBJECTS} are JSON"
    if not isinstance(config, dict):
        return f"{CONFIG} is a stream configuration (a JSON object)"
    status = attributes.get(STATUS) or config.get("kc_status") or SsfStream.ENABLED
    try:
        restore(client, config, status=status, subjects=subjects,
                reason=attributes.get(STATUS_REASON) or config.get("kc_status_reason") or "")
    except SsfRefused as exc:
        return f"{CONFIG}: {exc.description}"
    return None


def register(register_attribute_part):
    """From ``OidcConfig.ready``: the stream as a part of the receiver client's attributes, left
    out of a client's GET while the ``ssf`` feature is off (the export carries it still)."""
    register_attribute_part("Shared Signals stream, which its receiver manages through the SSF stream API",
                            STREAM_KEYS, export, load, feature="ssf")
