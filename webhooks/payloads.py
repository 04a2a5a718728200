"""The bodies of one message, one per format its deliveries use, rendered once when the event is
written (so every attempt sends the same bytes and the signature covers them), or when it is
first redelivered to an endpoint of a format it was not rendered in (``render_later``).

A format is the pair of two endpoint settings: the payload kind (``thin``: type and ids;
``fat``: plus the object's representation of a payload version) and the envelope
(``standard``: ``type``, ``timestamp``, ``data``; ``cloudevents``: CloudEvents 1.0 in structured
JSON mode). The format of thin, standard deliveries is "" and its body the message's ``payload``,
the bytes every endpoint received before payloads were chosen. Others are keys such as
``thin+ce``, ``fat.v1`` or ``fat.v1+ce``.

An app can register an envelope of its own (``register_envelope``): its name is then the format,
and its renderer makes the whole body from the message's ``data`` (the Shared Signals
transmitter's signed SETs, ``oidc.ssf``; webhooks never import the app that renders them). An
endpoint of such an envelope is that app's (``owner_of``): the console shows it read-only and the
webhook API refuses to change or delete it.
"""
import json
from dataclasses import dataclass
from datetime import datetime

from realms.registry import Registry

from . import conf
from .errors import WebhooksError

THIN, FAT = "thin", "fat"
STANDARD, CLOUDEVENTS = "standard", "cloudevents"
KINDS, ENVELOPES = (THIN, FAT), (STANDARD, CLOUDEVENTS)
_CE = "+ce"
PAYLOAD_VERSION_HEADER = "webhook-payload-version"
JSON, CLOUDEVENTS_JSON = "application/json", "application/cloudevents+json"


@dataclass(frozen=True)
class Envelope:
    """A registered envelope: ``render(message_id=, source=, event_type=, occurred_at=, data=)``
    returns the body, sent with ``content_type``; ``owner(endpoint)`` gives (the text naming what
    manages an endpoint of this envelope, a console link to it)."""

    content_type: str
    render: object
    owner: object


REGISTERED_ENVELOPES = Registry("webhook envelopes")


def register_envelope(name, content_type, render, owner):
    """The portal names the envelope by the message ``webhookPortalEnvelope_<name>``."""
    REGISTERED_ENVELOPES.add(name, Envelope(content_type, render, owner))


def owner_of(endpoint):
    """(text, console link) of what manages ``endpoint`` through an API of its own, or None for
    an endpoint of the realm's admins."""
    envelope = REGISTERED_ENVELOPES.get(endpoint.envelope)
    return envelope.owner(endpoint) if envelope else None


def format_of(kind, version, envelope):
    if envelope in REGISTERED_ENVELOPES:
        return envelope
    base = f"{FAT}.{version}" if kind == FAT else THIN
    name = base + (_CE if envelope == CLOUDEVENTS else "")
    return "" if name == THIN else name


def parse_format(fmt):
    """(kind, version or "", envelope) of a format."""
    base, ce = (fmt[:-len(_CE)], True) if fmt.endswith(_CE) else (fmt or THIN, False)
    kind, _, version = base.partition(".")
    return kind, version, CLOUDEVENTS if ce else STANDARD


def _dumps(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _timestamp(when):
    return when.isoformat().replace("+00:00", "Z")


def thin_body(event_type, occurred_at, data):
    return _dumps({"type": event_type, "timestamp": _timestamp(occurred_at), "data": data})


def _descriptor(kind, version, truncated):
    """What a versioned body says of itself: its kind, version and whether it was cut to thin."""
    return {"payload": kind, "payloadVersion": version, **({"truncated": True} if truncated else {})}


def _standard(event_type, occurred_at, data, descriptor):
    return _dumps({"type": event_type, "timestamp": _timestamp(occurred_at), **descriptor, "data": data})


def _cloudevent(message_id, source, event_type, occurred_at, data, descriptor):
    # CloudEvents extension attributes are lower-case letters and digits only.
    extensions = {k.lower(): v for k, v in descriptor.items()}
    return _dumps({"specversion": "1.0", "id": message_id, "source": source, "type": event_type,
                   "time": _timestamp(occurred_at), "datacontenttype": JSON, **extensions, "data": data})


def _render(fmt, *, message_id, source, event_type, occurred_at, data, descriptor):
    if fmt in REGISTERED_ENVELOPES:
        return REGISTERED_ENVELOPES[fmt].render(
            message_id=message_id, source=source, event_type=event_type, occurred_at=occurred_at, data=data)
    if parse_format(fmt)[2] == CLOUDEVENTS:
        return _cloudevent(message_id, source, event_type, occurred_at, data, descriptor)
    return _standard(event_type, occurred_at, data, descriptor)


def bodies(formats, *, message_id, source, event_type, occurred_at, data, snapshot):
    """{format: body} for ``formats`` (the default "" excluded). ``snapshot(version)`` gives the
    representation of the object for that version (None: none); it is called once per version.
    A fat body over ``IDP_WEBHOOK_PAYLOAD_LIMIT`` bytes is sent thin, flagged ``truncated``."""
    out, fat_data = {}, {}
    for fmt in sorted(formats - {""}):
        kind, version, _ = parse_format(fmt)
        body_data, descriptor = data, {}
        if kind == FAT and fmt not in REGISTERED_ENVELOPES:
            if version not in fat_data:
                fat = {**data, "representation": snapshot(version)}
                size = len(_standard(event_type, occurred_at, fat, _descriptor(FAT, version, False)).encode())
                fat_data[version] = fat if size <= conf.get("IDP_WEBHOOK_PAYLOAD_LIMIT") else None
            body_data = fat_data[version] or data
            descriptor = _descriptor(FAT if fat_data[version] else THIN, version, fat_data[version] is None)
        out[fmt] = _render(fmt, message_id=message_id, source=source, event_type=event_type,
                           occurred_at=occurred_at, data=body_data, descriptor=descriptor)
    return out


class NotRendered(WebhooksError):
    """A message cannot be given in a format: the snapshot that format carries was never taken."""


def render_later(fmt, *, payload, stored_bodies, message_id, source):
    """The body of ``fmt`` for a message written before an endpoint chose that format (a
    redelivery to it), from what the message kept: its thin ``payload`` has the data of every
    thin format, and a fat body of the same version (in the other envelope) has the snapshot
    taken at the event, cut to thin or not. The object as it is now would be another object's
    state under the old event id, so without such a body this raises NotRendered."""
    thin = json.loads(payload)
    occurred_at = datetime.fromisoformat(thin["timestamp"])
    data, descriptor = thin["data"], {}
    kind, version, _ = parse_format(fmt)
    if kind == FAT and fmt not in REGISTERED_ENVELOPES:
        kept = [json.loads(body) for other, body in sorted(json.loads(stored_bodies or "{}").items())
                if other not in REGISTERED_ENVELOPES and parse_format(other)[:2] == (FAT, version)]
        if not kept:
            raise NotRendered(f"the event was written before any endpoint asked for {FAT} {version} payloads, so "
                              "no snapshot of its object was taken then (the object as it is now would be "
                              "another state under the same event id); a thin endpoint can have it redelivered")
        data = kept[0]["data"]
        descriptor = _descriptor(kept[0]["payload"], version, kept[0].get("truncated", False))
    return _render(fmt, message_id=message_id, source=source, event_type=thin["type"],
                   occurred_at=occurred_at, data=data, descriptor=descriptor)


def body_of(payload, stored_bodies, fmt):
    """The exact body of a delivery of ``fmt`` from its message's ``payload`` and ``bodies``."""
    return payload if not fmt else json.loads(stored_bodies)[fmt]


def headers(fmt):
    """The headers a delivery of ``fmt`` carries beside the Standard Webhooks ones."""
    if fmt in REGISTERED_ENVELOPES:
        return {"Content-Type": REGISTERED_ENVELOPES[fmt].content_type}
    kind, version, envelope = parse_format(fmt)
    out = {"Content-Type": CLOUDEVENTS_JSON if envelope == CLOUDEVENTS else JSON}
    if kind == FAT:
        out[PAYLOAD_VERSION_HEADER] = version
    return out
