"""XML Encryption of an assertion to the SP's certificate (``saml.encrypt``).

An EncryptedAssertion holds the assertion encrypted with a fresh AES key, and that key
encrypted with the SP's RSA public key (RSA-OAEP, MGF1 with SHA-1 as ``rsa-oaep-mgf1p``
defines). Only encryption is needed on the IdP side, and it is a few lines over ``cryptography``
(see docs/decisions/0008-saml.md). The data algorithm is the client attribute
``saml.encryption.algorithm`` (an XML-Enc URI), AES-256-GCM by default; AES-CBC is there for
service providers that predate GCM.
"""
import base64
import os

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import padding as sym_padding
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from lxml import etree

from . import constants as c
from .errors import SamlError
from .signatures import certificate_from_attribute

AES128_CBC = f"{c.NS_XENC}aes128-cbc"
AES256_CBC = f"{c.NS_XENC}aes256-cbc"
AES128_GCM = f"{c.NS_XENC11}aes128-gcm"
AES256_GCM = f"{c.NS_XENC11}aes256-gcm"
RSA_OAEP_MGF1P = f"{c.NS_XENC}rsa-oaep-mgf1p"
_KEY_BYTES = {AES128_CBC: 16, AES256_CBC: 32, AES128_GCM: 16, AES256_GCM: 32}
ALGORITHM_ATTRIBUTE = "saml.encryption.algorithm"
DEFAULT_ALGORITHM = AES256_GCM


class EncryptionError(SamlError):
    pass


def _encrypt_data(algorithm, key, plaintext):
    if algorithm in (AES128_GCM, AES256_GCM):
        iv = os.urandom(12)
        return iv + AESGCM(key).encrypt(iv, plaintext, None)  # ciphertext || 16-byte tag
    iv = os.urandom(16)
    padder = sym_padding.PKCS7(128).padder()
    padded = padder.update(plaintext) + padder.finalize()
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return iv + encryptor.update(padded) + encryptor.finalize()


def _el(parent, ns, name, **attrs):
    return etree.SubElement(parent, etree.QName(ns, name), **attrs)


def encrypt_assertion(assertion_xml: bytes, client):
    """A ``saml:EncryptedAssertion`` element for ``client`` (its encryption certificate, or its
    signing certificate as Keycloak falls back to)."""
    attributes = client.attributes or {}
    cert = (certificate_from_attribute(attributes.get(c.ATTR_ENCRYPTION_CERTIFICATE, ""))
            or certificate_from_attribute(attributes.get(c.ATTR_SIGNING_CERTIFICATE, "")))
    if cert is None or not isinstance(cert.public_key(), rsa.RSAPublicKey):
        raise EncryptionError("the client has no RSA encryption certificate")
    algorithm = attributes.get(ALGORITHM_ATTRIBUTE) or DEFAULT_ALGORITHM
    if algorithm not in _KEY_BYTES:
        raise EncryptionError("unsupported encryption algorithm")
    key = os.urandom(_KEY_BYTES[algorithm])
    encrypted_key = cert.public_key().encrypt(
        key, padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=None))

    wrapper = etree.Element(etree.QName(c.NS_SAML, "EncryptedAssertion"), nsmap={"saml": c.NS_SAML})
    data = etree.SubElement(wrapper, etree.QName(c.NS_XENC, "EncryptedData"), nsmap={"xenc": c.NS_XENC},
                            Type=f"{c.NS_XENC}Element")
    _el(data, c.NS_XENC, "EncryptionMethod", Algorithm=algorithm)
    key_info = etree.SubElement(data, etree.QName(c.NS_DS, "KeyInfo"), nsmap={"ds": c.NS_DS})
    ek = _el(key_info, c.NS_XENC, "EncryptedKey")
    method = _el(ek, c.NS_XENC, "EncryptionMethod", Algorithm=RSA_OAEP_MGF1P)
    _el(method, c.NS_DS, "DigestMethod", Algorithm="http://www.w3.org/2000/09/xmldsig#sha1")
    _el(_el(ek, c.NS_XENC, "CipherData"), c.NS_XENC, "CipherValue").text = base64.b64encode(encrypted_key).decode()
    cipher = _encrypt_data(algorithm, key, assertion_xml)
    _el(_el(data, c.NS_XENC, "CipherData"), c.NS_XENC, "CipherValue").text = base64.b64encode(cipher).decode()
    return wrapper
