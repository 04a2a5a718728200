"""Reading a message a SAML client sent: decode, parse hardened, find the client by its Issuer,
check the signature (required when the client says so, verified whenever present), version,
IssueInstant freshness, Destination, and record the request id against replay.

Everything here raises UntrustedRequest: until these checks pass, nothing is sent to any address
the message names.
"""
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from . import constants as c
from . import signatures, xml
from .clients import SamlClient, by_entity_id
from .errors import UntrustedRequest
from .models import SeenRequest

# A request is accepted for this long after its IssueInstant (and this much before it, for
# clocks that run ahead); its id is remembered for as long, after which it would be stale anyway.
MAX_AGE = timedelta(minutes=5)
CLOCK_SKEW = timedelta(seconds=60)
MAX_ID_LENGTH = 256


@dataclass
class Inbound:
    root: object  # the verified element when signed, else the parsed one
    client: SamlClient
    binding: str
    relay_state: str
    signed: bool

    @property
    def kind(self):
        return self.root.tag.rsplit("}", 1)[-1]

    @property
    def id(self):
        return self.root.get("ID", "")


def parse_instant(value):
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (AttributeError, ValueError):
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def read(request, realm, *, binding, params, param, endpoint_url, expected=()):
    """The checked message carried in ``param`` (SAMLRequest or SAMLResponse)."""
    for name in (param, "RelayState", "Signature", "SigAlg"):
        if len(params.getlist(name)) > 1:
            raise UntrustedRequest(f"Duplicated parameter: {name}")
    encoded = params.get(param, "")
    if binding == c.BINDING_REDIRECT:
        root = xml.parse(xml.decode_redirect(encoded))
    else:
        root = xml.parse(xml.decode_post(encoded))
    if root.tag not in {f"{{{c.NS_SAMLP}}}{kind}" for kind in expected}:
        raise UntrustedRequest("Unexpected SAML message.")
    try:
        return _read_checked(request, realm, root, binding=binding, params=params, param=param,
                             endpoint_url=endpoint_url)
    except UntrustedRequest as exc:
        exc.kind = root.tag.rsplit("}", 1)[-1]
        raise


def _read_checked(request, realm, root, *, binding, params, param, endpoint_url):
    issuer_el = root.find(f"{{{c.NS_SAML}}}Issuer")
    entity_id = (issuer_el.text or "").strip() if issuer_el is not None else ""
    client = by_entity_id(realm, entity_id)

    required = client.flag(c.ATTR_CLIENT_SIGNATURE)
    allow_sha1 = signatures.sha1_allowed(client.client)
    cert = signatures.client_certificate(client.client)
    signed = False
    try:
        if binding == c.BINDING_REDIRECT:
            if "Signature" in params or "SigAlg" in params:
                signatures.verify_query(request.META.get("QUERY_STRING", ""), param, cert, allow_sha1=allow_sha1)
                signed = True
            elif required:
                raise UntrustedRequest("Missing signature.", "invalid_signature")
        elif signatures.has_signature(root) and (required or cert is not None):
            root = signatures.verify_element(root, cert, allow_sha1=allow_sha1)
            signed = True
        elif required:
            raise UntrustedRequest("Missing signature.", "invalid_signature")
    except UntrustedRequest as exc:
        exc.client_id = client.entity_id
        raise
    message = Inbound(root=root, client=client, binding=binding, relay_state=params.get("RelayState", ""),
                      signed=signed)
    _check_header(message, endpoint_url)
    return message


def _check_header(message, endpoint_url):
    check_header(message.root, signed=message.signed, binding=message.binding, endpoint_url=endpoint_url,
                 client_id=message.client.entity_id)


def check_header(root, *, signed, binding, endpoint_url, client_id=""):
    """Version, ID, IssueInstant freshness and Destination of a message (a client's request, or
    an answer of an identity provider we broker to); UntrustedRequest otherwise."""

    def refuse(text, error="invalid_request"):
        raise UntrustedRequest(text, error, client_id=client_id)

    if root.get("Version") != c.VERSION:
        refuse("Unsupported SAML version.")
    message_id = root.get("ID", "")
    if not message_id or len(message_id) > MAX_ID_LENGTH:
        refuse("The SAML message has no valid ID.")
    issued = parse_instant(root.get("IssueInstant", ""))
    now = timezone.now()
    if issued is None:
        refuse("The SAML message has no valid IssueInstant.")
    if issued > now + CLOCK_SKEW or issued < now - MAX_AGE:
        refuse("The SAML message is stale or from the future.", "expired_code")
    destination = root.get("Destination")
    # Bindings §3.4.5.2 / §3.5.5.2: a signed message must name where it was sent; if any
    # message names a place, it must be here.
    if destination is not None and destination != endpoint_url:
        refuse("The SAML message was sent to another destination.")
    if signed and destination is None and binding == c.BINDING_POST:
        refuse("A signed SAML message must carry its Destination.")


def first_use(client, request_id):
    """Remember ``request_id`` from ``client`` until a message carrying it would be stale; False
    when it is remembered already (a replay). Expired ids are left to the periodic purge
    (``saml.purges``); one it has not yet deleted is taken over, not counted as a replay."""
    now = timezone.now()
    expires_at = now + MAX_AGE + CLOCK_SKEW
    try:
        with transaction.atomic():
            SeenRequest.objects.create(client=client, request_id=request_id, expires_at=expires_at)
    except IntegrityError:
        return SeenRequest.objects.filter(client=client, request_id=request_id, expires_at__lte=now).update(
            expires_at=expires_at) == 1
    return True


def record_request_id(message):
    """Refuse a request id seen before from this client (replay); remember it otherwise."""
    if not first_use(message.client.client, message.id):
        raise UntrustedRequest("This request was already used.", "invalid_request",
                               client_id=message.client.entity_id)
