"""The IdP's SAML metadata (SAML metadata §2.4.3): entity id = the realm's issuer, every
active and passive RSA certificate as a signing key, SSO and SLO services for the
HTTP-Redirect and HTTP-POST bindings (one endpoint, as Keycloak has), supported NameID formats."""
from lxml import etree

from . import constants as c
from . import keys


def descriptor(realm, issuer):
    endpoint = f"{issuer}/protocol/saml"
    root = etree.Element(etree.QName(c.NS_MD, "EntityDescriptor"), nsmap={"md": c.NS_MD, "ds": c.NS_DS},
                         entityID=issuer)
    idp = etree.SubElement(root, etree.QName(c.NS_MD, "IDPSSODescriptor"), WantAuthnRequestsSigned="true",
                           protocolSupportEnumeration=c.NS_SAMLP)
    for credential in keys.published_credentials(realm):
        key = etree.SubElement(idp, etree.QName(c.NS_MD, "KeyDescriptor"), use="signing")
        info = etree.SubElement(key, etree.QName(c.NS_DS, "KeyInfo"))
        etree.SubElement(info, etree.QName(c.NS_DS, "KeyName")).text = credential.kid
        data = etree.SubElement(info, etree.QName(c.NS_DS, "X509Data"))
        etree.SubElement(data, etree.QName(c.NS_DS, "X509Certificate")).text = credential.certificate_b64
    for binding in (c.BINDING_POST, c.BINDING_REDIRECT):
        etree.SubElement(idp, etree.QName(c.NS_MD, "SingleLogoutService"), Binding=binding, Location=endpoint)
    for urn in (c.NAMEID_PERSISTENT, c.NAMEID_TRANSIENT, c.NAMEID_UNSPECIFIED, c.NAMEID_EMAIL):
        etree.SubElement(idp, etree.QName(c.NS_MD, "NameIDFormat")).text = urn
    for binding in (c.BINDING_POST, c.BINDING_REDIRECT):
        etree.SubElement(idp, etree.QName(c.NS_MD, "SingleSignOnService"), Binding=binding, Location=endpoint)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)
