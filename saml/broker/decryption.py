"""Decrypting an identity provider's ``saml:EncryptedAssertion`` with the realm's keys.

Our SP metadata publishes the realm's RSA keys for encryption (``descriptor``), so the key that
wraps the data key is one of them: active ones, or a passive one for an answer that crossed a key
rotation. The key transport is RSA-OAEP (``rsa-oaep-mgf1p``, or XML Encryption 1.1's
``rsa-oaep`` with its digest and MGF); RSA PKCS#1 v1.5 key transport is refused (Bleichenbacher's
oracle). The data is AES in CBC or GCM mode, or Triple-DES CBC, which several identity providers
(pysaml2 among them) still use by default. The plaintext is parsed by the same hardened parser
as every message (``saml.xml.parse``: no DTD, no entities)."""
import base64
import binascii

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .. import constants as c
from .. import keys, xml
from ..encryption import AES128_CBC, AES128_GCM, AES256_CBC, AES256_GCM, RSA_OAEP_MGF1P
from ..errors import UntrustedRequest

AES192_CBC = f"{c.NS_XENC}aes192-cbc"
AES192_GCM = f"{c.NS_XENC11}aes192-gcm"
TRIPLEDES_CBC = f"{c.NS_XENC}tripledes-cbc"
RSA_OAEP_11 = f"{c.NS_XENC11}rsa-oaep"
_GCM = {AES128_GCM: 16, AES192_GCM: 24, AES256_GCM: 32}
_CBC = {AES128_CBC: 16, AES192_CBC: 24, AES256_CBC: 32, TRIPLEDES_CBC: 24}
_DIGESTS = {"http://www.w3.org/2000/09/xmldsig#sha1": hashes.SHA1,
            "http://www.w3.org/2001/04/xmlenc#sha256": hashes.SHA256,
            "http://www.w3.org/2001/04/xmldsig-more#sha384": hashes.SHA384,
            "http://www.w3.org/2001/04/xmlenc#sha512": hashes.SHA512}
_MGFS = {f"{c.NS_XENC11}mgf1sha1": hashes.SHA1, f"{c.NS_XENC11}mgf1sha256": hashes.SHA256,
         f"{c.NS_XENC11}mgf1sha384": hashes.SHA384, f"{c.NS_XENC11}mgf1sha512": hashes.SHA512}


def _refuse(text="The encrypted assertion cannot be decrypted."):
    raise UntrustedRequest(text, "invalid_saml_response")


def _b64(element):
    value = element.find(f"{{{c.NS_XENC}}}CipherData/{{{c.NS_XENC}}}CipherValue") if element is not None else None
    if value is None or not (value.text or "").strip():
        _refuse()
    try:
        return base64.b64decode("".join(value.text.split()), validate=True)
    except (binascii.Error, ValueError):
        _refuse()


def _oaep(method):
    algorithm = method.get("Algorithm") if method is not None else None
    digest = method.find(f"{{{c.NS_DS}}}DigestMethod") if method is not None else None
    digest_class = _DIGESTS.get(digest.get("Algorithm")) if digest is not None else hashes.SHA1
    if algorithm == RSA_OAEP_MGF1P and digest_class is not None:
        return padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=digest_class(), label=None)
    if algorithm == RSA_OAEP_11 and digest_class is not None:
        mgf = method.find(f"{{{c.NS_XENC11}}}MGF")
        mgf_class = _MGFS.get(mgf.get("Algorithm")) if mgf is not None else hashes.SHA1
        if mgf_class is not None:
            return padding.OAEP(mgf=padding.MGF1(mgf_class()), algorithm=digest_class(), label=None)
    _refuse("The assertion's key transport algorithm is not accepted.")


def _data_key(realm, encrypted_key):
    scheme = _oaep(encrypted_key.find(f"{{{c.NS_XENC}}}EncryptionMethod"))
    wrapped = _b64(encrypted_key)
    for credential in keys.published_credentials(realm):
        try:
            return credential.private_key.decrypt(wrapped, scheme)
        except ValueError:
            continue
    _refuse("The assertion was not encrypted to a key of this realm.")


def _decrypt_data(algorithm, key, cipher):
    try:
        if algorithm in _GCM and len(key) == _GCM[algorithm]:
            return AESGCM(key).decrypt(cipher[:12], cipher[12:], None)
        if algorithm in _CBC and len(key) == _CBC[algorithm]:
            block = TripleDES(key) if algorithm == TRIPLEDES_CBC else algorithms.AES(key)
            size = block.block_size // 8
            if len(cipher) < 2 * size or len(cipher) % size:
                _refuse()
            decryptor = Cipher(block, modes.CBC(cipher[:size])).decryptor()
            padded = decryptor.update(cipher[size:]) + decryptor.finalize()
            # XML Encryption's padding: the last byte counts the padding bytes, whatever they are.
            count = padded[-1]
            if not 1 <= count <= size:
                _refuse()
            return padded[:-count]
    except (ValueError, TypeError, InvalidTag):  # InvalidTag: GCM's authentication failed
        _refuse()
    _refuse("The assertion's encryption algorithm is not accepted.")


def decrypt_assertion(realm, wrapper):
    """The ``saml:Assertion`` inside ``wrapper`` (an EncryptedAssertion), parsed hardened."""
    data = wrapper.find(f"{{{c.NS_XENC}}}EncryptedData")
    if data is None:
        _refuse()
    encrypted_key = data.find(f"{{{c.NS_DS}}}KeyInfo/{{{c.NS_XENC}}}EncryptedKey")
    if encrypted_key is None:  # carried beside the data (referenced by a RetrievalMethod)
        encrypted_key = wrapper.find(f"{{{c.NS_XENC}}}EncryptedKey")
    if encrypted_key is None:
        _refuse()
    method = data.find(f"{{{c.NS_XENC}}}EncryptionMethod")
    plaintext = _decrypt_data(method.get("Algorithm") if method is not None else "", _data_key(realm, encrypted_key),
                              _b64(data))
    root = xml.parse(plaintext)
    if root.tag != f"{{{c.NS_SAML}}}Assertion":
        _refuse("The encrypted element is not an assertion.")
    return root

