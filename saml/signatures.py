"""XML signatures (XML-DSig through signxml) and HTTP-Redirect query-string signatures.

Policy: RSA with SHA-256, SHA-384 or SHA-512 is always accepted; SHA-1 (signature or digest)
only from a client whose configured signature algorithm is a SHA-1 one (it opted in). We sign
with the client's configured algorithm, RSA_SHA256 by default.

Signature wrapping: an enveloped signature counts only when it is a direct child of the message's
root element and references that root by its ``ID``, and that ID occurs once in the document.
The caller then works on the element signxml returns as verified (``signed_xml``), never on the
received tree, so a second, unsigned copy of the message cannot be the one that is read.
"""
import base64
from urllib.parse import unquote_plus

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from lxml import etree
from signxml import SignatureConfiguration, XMLSigner, XMLVerifier
from signxml.algorithms import DigestAlgorithm, SignatureMethod
from signxml.exceptions import InvalidInput
from signxml.exceptions import InvalidSignature as XmlInvalidSignature

from . import constants as c
from .errors import UntrustedRequest

RSA_SHA1 = "http://www.w3.org/2000/09/xmldsig#rsa-sha1"
RSA_SHA256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"
RSA_SHA384 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha384"
RSA_SHA512 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha512"

_QUERY_HASHES = {RSA_SHA1: hashes.SHA1, RSA_SHA256: hashes.SHA256, RSA_SHA384: hashes.SHA384,
                 RSA_SHA512: hashes.SHA512}
# Keycloak's names (attribute saml.signature.algorithm) -> (signature method, digest).
KEYCLOAK_ALGORITHMS = {
    "RSA_SHA256": (SignatureMethod.RSA_SHA256, DigestAlgorithm.SHA256),
    "RSA_SHA512": (SignatureMethod.RSA_SHA512, DigestAlgorithm.SHA512),
    "RSA_SHA1": (SignatureMethod.RSA_SHA1, DigestAlgorithm.SHA1),
}
DEFAULT_ALGORITHM = "RSA_SHA256"
_STRONG_METHODS = frozenset({SignatureMethod.RSA_SHA256, SignatureMethod.RSA_SHA384, SignatureMethod.RSA_SHA512})
_STRONG_DIGESTS = frozenset({DigestAlgorithm.SHA256, DigestAlgorithm.SHA384, DigestAlgorithm.SHA512})


def client_algorithm(client):
    name = (client.attributes or {}).get(c.ATTR_SIGNATURE_ALGORITHM) or DEFAULT_ALGORITHM
    return name if name in KEYCLOAK_ALGORITHMS else DEFAULT_ALGORITHM


def sha1_allowed(client):
    return client_algorithm(client) == "RSA_SHA1"


def certificate_from_attribute(value):
    """The SP certificate Keycloak keeps as base64 DER (PEM armour tolerated); None if unusable."""
    if not value:
        return None
    text = value.strip()
    try:
        if text.startswith("-----BEGIN"):
            return x509.load_pem_x509_certificate(text.encode())
        return x509.load_der_x509_certificate(base64.b64decode("".join(text.split())))
    except ValueError:
        return None


def client_certificate(client):
    return certificate_from_attribute((client.attributes or {}).get(c.ATTR_SIGNING_CERTIFICATE, ""))


# Enveloped XML signatures ----------------------------------------------------------------------

class _OptInSha1Signer(XMLSigner):
    """signxml refuses SHA-1 by default; a client that configured RSA_SHA1 opted in."""

    def check_deprecated_methods(self):
        pass


def sign_element(element, *, key, cert, algorithm=DEFAULT_ALGORITHM, key_name=None):
    """``element`` (a detached SAML message or assertion with an ``ID``) signed with an enveloped
    signature placed right after its ``saml:Issuer`` (SAML core §5.4.1 ordering)."""
    method, digest = KEYCLOAK_ALGORITHMS[algorithm]
    placeholder = etree.Element(etree.QName(c.NS_DS, "Signature"), nsmap={"ds": c.NS_DS}, Id="placeholder")
    issuer = element.find(f"{{{c.NS_SAML}}}Issuer")
    if issuer is not None:
        issuer.addnext(placeholder)
    else:
        element.insert(0, placeholder)
    signer_class = _OptInSha1Signer if algorithm == "RSA_SHA1" else XMLSigner
    signer = signer_class(signature_algorithm=method, digest_algorithm=digest, c14n_algorithm=c.EXC_C14N)
    signer.namespaces = {"ds": c.NS_DS}
    return signer.sign(element, key=key, cert=[cert], reference_uri=f"#{element.get('ID')}",
                       key_name=key_name, id_attribute="ID")


def has_signature(root):
    return root.find(f"{{{c.NS_DS}}}Signature") is not None


def verify_element(root, cert, *, allow_sha1=False):
    """The verified copy of ``root`` (its enveloped signature checked against ``cert``), or
    UntrustedRequest. See the module docstring for the wrapping rules."""
    if cert is None:
        raise UntrustedRequest("The client has no signing certificate.", "invalid_signature")
    signatures = root.findall(f"{{{c.NS_DS}}}Signature")
    if len(signatures) != 1:
        raise UntrustedRequest("Invalid signature.", "invalid_signature")
    message_id = root.get("ID") or ""
    same_id = root.xpath("//*[@ID=$id]", id=message_id)
    if not message_id or len(same_id) != 1:
        raise UntrustedRequest("Invalid signature.", "invalid_signature")
    methods, digests = _STRONG_METHODS, _STRONG_DIGESTS
    if allow_sha1:
        methods, digests = methods | {SignatureMethod.RSA_SHA1}, digests | {DigestAlgorithm.SHA1}
    config = SignatureConfiguration(location="./", expect_references=1, signature_methods=methods,
                                    digest_algorithms=digests)
    cert_pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    try:
        result = XMLVerifier().verify(etree.tostring(root), x509_cert=cert_pem, expect_config=config,
                                      id_attribute="ID")
    except (XmlInvalidSignature, InvalidInput, ValueError) as exc:
        raise UntrustedRequest("Invalid signature.", "invalid_signature") from exc
    signed = result.signed_xml
    if signed is None or signed.tag != root.tag or signed.get("ID") != message_id:
        raise UntrustedRequest("Invalid signature.", "invalid_signature")
    return signed


# HTTP-Redirect query-string signatures (bindings §3.4.4.1) ------------------------------------

def _raw_params(query_string):
    """name -> value exactly as sent (still URL-encoded): the signature covers those bytes."""
    raw = {}
    for part in query_string.split("&"):
        name, _, value = part.partition("=")
        if name in raw:
            raise UntrustedRequest(f"Duplicated parameter: {name}")
        raw[name] = value
    return raw


def verify_query(query_string, message_param, cert, *, allow_sha1=False):
    """Check the Redirect binding's ``Signature`` over ``SAMLRequest|SAMLResponse``,
    ``RelayState`` and ``SigAlg`` in the order the binding fixes."""
    if cert is None:
        raise UntrustedRequest("The client has no signing certificate.", "invalid_signature")
    raw = _raw_params(query_string)
    sig_alg = unquote_plus(raw.get("SigAlg", ""))
    if "Signature" not in raw or not sig_alg:
        raise UntrustedRequest("Missing signature.", "invalid_signature")
    if sig_alg not in _QUERY_HASHES or (sig_alg == RSA_SHA1 and not allow_sha1):
        raise UntrustedRequest("Signature algorithm not allowed.", "invalid_signature")
    signed = f"{message_param}={raw.get(message_param, '')}"
    if "RelayState" in raw:
        signed += f"&RelayState={raw['RelayState']}"
    signed += f"&SigAlg={raw['SigAlg']}"
    try:
        signature = base64.b64decode(unquote_plus(raw["Signature"]), validate=True)
        public_key = cert.public_key()
        if not isinstance(public_key, rsa.RSAPublicKey):
            raise UntrustedRequest("Unsupported key type.", "invalid_signature")
        public_key.verify(signature, signed.encode(), padding.PKCS1v15(), _QUERY_HASHES[sig_alg]())
    except (InvalidSignature, ValueError) as exc:
        raise UntrustedRequest("Invalid signature.", "invalid_signature") from exc


def sign_query(params, key, algorithm=DEFAULT_ALGORITHM):
    """The query string (already ordered: message, optional RelayState) with SigAlg and
    Signature appended."""
    from urllib.parse import quote_plus

    sig_alg = {"RSA_SHA256": RSA_SHA256, "RSA_SHA512": RSA_SHA512, "RSA_SHA1": RSA_SHA1}[algorithm]
    parts = [f"{name}={quote_plus(value)}" for name, value in params if value]
    parts.append(f"SigAlg={quote_plus(sig_alg)}")
    signed = "&".join(parts)
    signature = key.sign(signed.encode(), padding.PKCS1v15(), _QUERY_HASHES[sig_alg]())
    return f"{signed}&Signature={quote_plus(base64.b64encode(signature).decode())}"
