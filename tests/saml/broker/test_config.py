"""The provider's settings: Keycloak's keys checked (what is not implemented is refused, never
silently ignored), import-config from pysaml2's metadata, and our SP metadata at the broker's
``endpoint/descriptor``."""
import pytest
from lxml import etree

from realms.brokering.providers import BrokerError
from saml import constants as c
from saml import keys, signatures
from saml.broker.config import clean_config

from ..sp import key_pair

BASE = {"singleSignOnServiceUrl": "https://idp.example/sso"}


@pytest.mark.parametrize("config, message", [
    ({"somethingElse": "1"}, "Unsupported configuration for a SAML identity provider: somethingElse"),
    ({"artifactBindingResponse": "true"}, "artifactBindingResponse is not supported by this server"),
    ({"useMetadataDescriptorUrl": "true"}, "useMetadataDescriptorUrl is not supported by this server"),
    ({"artifactResolutionServiceUrl": "https://idp.example/ars"},
     "artifactResolutionServiceUrl is not supported by this server"),
    ({"encryptionAlgorithm": "RSA1_5"}, "encryptionAlgorithm must be RSA-OAEP (RSA1_5 key transport is not accepted)"),
    ({"singleSignOnServiceUrl": ""}, "singleSignOnServiceUrl is required"),
    ({"singleLogoutServiceUrl": "javascript:alert(1)"}, "singleLogoutServiceUrl must be an http or https URL"),
    ({"nameIDPolicyFormat": c.NAMEID_TRANSIENT},
     "Can not have Transient NameID Policy Format together with SUBJECT Principal Type"),
    ({"principalType": "ATTRIBUTE"}, "principalAttribute is required when principalType is ATTRIBUTE"),
    ({"validateSignature": "true"}, "signingCertificate is required when validateSignature is on"),
    ({"signingCertificate": "not-a-certificate"}, "signingCertificate holds a value that is not an X.509 certificate"),
    ({"signatureAlgorithm": "DSA_SHA1"}, "signatureAlgorithm must be one of RSA_SHA256, RSA_SHA512, RSA_SHA1"),
    ({"wantAssertionsSigned": "yes"}, "wantAssertionsSigned must be true or false"),
    ({"allowedClockSkew": "-5"}, "allowedClockSkew must be a number, 0 or more"),
    ({"authnContextClassRefs": "password"}, "authnContextClassRefs must be a JSON array of strings"),
])
def test_config_refusals(config, message):
    with pytest.raises(ValueError) as caught:
        clean_config({**BASE, **config})
    assert str(caught.value) == message


def test_config_accepted_as_keycloak_writes_it():
    cert = key_pair("idp")[2]
    config = {**BASE, "signingCertificate": f"{cert},{cert}", "validateSignature": "true", "syncMode": "FORCE",
              "artifactBindingResponse": "false", "sendClientIdOnLogout": "false", "encryptionAlgorithm": "RSA-OAEP",
              "encryptionPublicKey": cert, "principalType": "FRIENDLY_ATTRIBUTE", "principalAttribute": "mail",
              "authnContextClassRefs": '["urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport"]'}
    assert clean_config(config) == config


def test_import_config_from_pysaml2_metadata(make_idp, upstream, saml_type):
    make_idp()
    imported = saml_type.import_config(upstream.metadata())
    assert imported["idpEntityId"] == upstream.entity_id
    assert imported["singleSignOnServiceUrl"] == upstream.sso and imported["postBindingAuthnRequest"] == "true"
    assert imported["singleLogoutServiceUrl"] == upstream.slo and imported["postBindingLogout"] == "true"
    assert imported["signingCertificate"] == upstream.cert_b64 and imported["validateSignature"] == "true"
    assert imported["wantAuthnRequestsSigned"] == "true"
    assert clean_config(imported) == imported
    with pytest.raises(BrokerError):
        saml_type.import_config('<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>')


def test_sp_descriptor(make_idp, rf, realm, saml_type):
    idp = make_idp(attributeConsumingServiceIndex="3", attributeConsumingServiceName="Portal")
    idp.mappers.create(realm=realm, name="mail", mapper_type="saml-user-attribute-idp-mapper",
                       config={"attribute.name": "urn:oid:0.9.2342.19200300.100.1.3", "user.attribute": "email"})
    answer = saml_type.endpoint(rf.get("/"), realm, idp, "descriptor")
    assert answer.status_code == 200 and answer["Content-Type"] == "application/xml"
    root = etree.fromstring(answer.content)
    ns = {"md": c.NS_MD, "ds": c.NS_DS}
    assert root.get("entityID") == "http://testserver/realms/acme"
    sp = root.find("md:SPSSODescriptor", ns)
    assert sp.get("AuthnRequestsSigned") == "true" and sp.get("WantAssertionsSigned") == "true"
    certificate = keys.signing_credential(realm).certificate_b64
    for use in ("signing", "encryption"):
        key = sp.find(f"md:KeyDescriptor[@use='{use}']", ns)
        assert key.find(".//ds:X509Certificate", ns).text == certificate
    endpoint = "http://testserver/realms/acme/broker/upstream/endpoint"
    acs = sp.find("md:AssertionConsumerService", ns)
    assert acs.get("Location") == endpoint and acs.get("Binding") == c.BINDING_POST
    assert {s.get("Location") for s in sp.findall("md:SingleLogoutService", ns)} == {endpoint}
    assert sp.find("md:NameIDFormat", ns).text == c.NAMEID_PERSISTENT
    service = sp.find("md:AttributeConsumingService", ns)
    assert service.get("index") == "3" and service.find("md:ServiceName", ns).text == "Portal"
    assert service.find("md:RequestedAttribute", ns).get("Name") == "urn:oid:0.9.2342.19200300.100.1.3"


def test_signed_sp_descriptor(make_idp, rf, realm, saml_type):
    idp = make_idp(signSpMetadata="true", entityId="https://sp.example/acme")
    root = etree.fromstring(saml_type.endpoint(rf.get("/"), realm, idp, "descriptor").content)
    assert root.get("entityID") == "https://sp.example/acme"
    verified = signatures.verify_element(root, keys.signing_credential(realm).certificate)
    assert verified.get("entityID") == "https://sp.example/acme"
