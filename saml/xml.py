"""Hardened XML parsing and the HTTP-Redirect / HTTP-POST encodings (SAML bindings §3.4, §3.5).

SAML messages never carry a DTD, so any document type declaration is refused outright: that
rules out external entities (XXE) and entity expansion (billion laughs) whatever the parser
does. The parser is also told not to resolve entities, not to load DTDs, not to touch the
network and to keep libxml2's size limits (no ``huge_tree``). Comments are dropped: they are not
part of a signature's canonical form, and a comment inside a signed NameID would otherwise
truncate the text a careless reader takes (the 2018 comment-injection attacks).
Inputs are bounded before decoding, and inflation of a Redirect message is bounded too.
"""
import base64
import binascii
import zlib

from lxml import etree

from .errors import UntrustedRequest

MAX_ENCODED = 256 * 1024
MAX_XML = 512 * 1024


def _parser():
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False,
                           huge_tree=False, remove_comments=True, remove_blank_text=False, collect_ids=False)


def parse(data: bytes):
    """The root element of a SAML message; UntrustedRequest for anything malformed or a DTD."""
    if len(data) > MAX_XML:
        raise UntrustedRequest("The SAML message is too large.")
    # Refuse before parsing: a declaration is never legitimate here, and it is what XXE and
    # entity-expansion bombs need.
    if b"<!DOCTYPE" in data.upper() or b"<!ENTITY" in data.upper():
        raise UntrustedRequest("Document type declarations are not allowed in SAML messages.")
    try:
        root = etree.fromstring(data, parser=_parser())
    except (etree.XMLSyntaxError, ValueError) as exc:
        raise UntrustedRequest("The SAML message is not well-formed XML.") from exc
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None:
        raise UntrustedRequest("Document type declarations are not allowed in SAML messages.")
    return root


def _b64decode(value: str) -> bytes:
    if len(value) > MAX_ENCODED:
        raise UntrustedRequest("The SAML message is too large.")
    try:
        return base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise UntrustedRequest("The SAML message is not valid base64.") from exc


def decode_post(value: str) -> bytes:
    return _b64decode(value)


def decode_redirect(value: str) -> bytes:
    """Base64, then raw DEFLATE (bindings §3.4.4.1), inflated to at most MAX_XML bytes."""
    raw = _b64decode(value)
    inflater = zlib.decompressobj(-15)
    try:
        data = inflater.decompress(raw, MAX_XML + 1)
    except zlib.error as exc:
        raise UntrustedRequest("The SAML message is not valid DEFLATE data.") from exc
    if len(data) > MAX_XML or inflater.unconsumed_tail:
        raise UntrustedRequest("The SAML message is too large.")
    return data


def encode_post(xml: bytes) -> str:
    return base64.b64encode(xml).decode()


def encode_redirect(xml: bytes) -> str:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    return base64.b64encode(compressor.compress(xml) + compressor.flush()).decode()


def serialize(element) -> bytes:
    return etree.tostring(element, xml_declaration=False, encoding="UTF-8")
