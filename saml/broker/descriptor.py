"""Our service provider metadata for one identity provider, at Keycloak's
``/realms/{realm}/broker/{alias}/endpoint/descriptor`` (Keycloak's SAMLIdentityProvider.export).

The entity id is ``entityId`` or the realm's issuer URL; the assertion consumer and single logout
services are the broker endpoint. Every active and passive RSA key of the realm is a signing key
(active first, then by priority); the active ones are also the encryption keys the provider
encrypts assertions to (``decryption`` decrypts with them). With ``attributeConsumingServiceIndex``
an AttributeConsumingService lists the attributes the provider's mappers read, as Keycloak's
mappers add them; ``signSpMetadata`` signs the document with the realm's key."""
from django.http import HttpResponse
from lxml import etree

from realms.brokering.broker import endpoint_url
from realms.http.web import realm_url
from realms.models import RealmKey

from .. import builders, keys, outbound
from .. import constants as c
from . import config as saml_config

# Mappers that name the SAML attribute they read (Keycloak's SamlMetadataDescriptorUpdater ones).
_REQUESTING_MAPPERS = ("saml-role-idp-mapper", "saml-user-attribute-idp-mapper", "saml-xpath-attribute-idp-mapper")


def _el(parent, name, ns=c.NS_MD, text=None, **attrs):
    element = etree.SubElement(parent, etree.QName(ns, name), **{k: v for k, v in attrs.items() if v is not None})
    if text is not None:
        element.text = text
    return element


def _key(parent, credential, use):
    key = _el(parent, "KeyDescriptor", use=use)
    info = _el(key, "KeyInfo", c.NS_DS)
    _el(info, "KeyName", c.NS_DS, credential.kid)
    _el(_el(info, "X509Data", c.NS_DS), "X509Certificate", c.NS_DS, credential.certificate_b64)


def _credentials(realm):
    """(credential, active?) of the realm's published RSA keys, active ones first."""
    statuses = dict(RealmKey.objects.filter(realm=realm, algorithm=keys.ALGORITHM).values_list("kid", "status"))
    found = [(credential, statuses.get(credential.kid) == RealmKey.ACTIVE) for credential in
             keys.published_credentials(realm)]
    return sorted(found, key=lambda pair: not pair[1])


def document(request, realm, idp):
    settings = saml_config.Settings(idp)
    endpoint = endpoint_url(request, realm, idp.alias)
    root = etree.Element(etree.QName(c.NS_MD, "EntityDescriptor"), nsmap={"md": c.NS_MD, "ds": c.NS_DS},
                         entityID=settings.entity_id(realm_url(request, realm.name)), ID=builders.new_id())
    sp = _el(root, "SPSSODescriptor", AuthnRequestsSigned=str(settings.flag("wantAuthnRequestsSigned")).lower(),
             WantAssertionsSigned=str(settings.flag("wantAssertionsSigned")).lower(),
             protocolSupportEnumeration=c.NS_SAMLP)
    credentials = _credentials(realm)
    for credential, _ in credentials:
        _key(sp, credential, "signing")
    for credential, active in credentials:
        if active:
            _key(sp, credential, "encryption")
    logout_first = c.BINDING_POST if settings.post_binding_logout else c.BINDING_REDIRECT
    for binding in (logout_first, *({c.BINDING_POST, c.BINDING_REDIRECT} - {logout_first})):
        _el(sp, "SingleLogoutService", Binding=binding, Location=endpoint)
    _el(sp, "NameIDFormat", text=settings.name_id_format)
    response_binding = c.BINDING_POST if settings.flag("postBindingResponse") else c.BINDING_REDIRECT
    _el(sp, "AssertionConsumerService", Binding=response_binding, Location=endpoint, index="1", isDefault="true")
    index = settings.attribute_consuming_service_index
    if index is not None:
        _attribute_consuming_service(sp, idp, settings, index)
    if settings.flag("signSpMetadata"):
        root = outbound.sign_with(realm, root, algorithm=settings.algorithm, transformer=settings.key_name_transformer)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=not settings.flag("signSpMetadata"))


def _attribute_consuming_service(sp, idp, settings, index):
    service = _el(sp, "AttributeConsumingService", index=str(index), isDefault="true")
    name = _el(service, "ServiceName", text=settings.config.get("attributeConsumingServiceName") or idp.alias)
    name.set("{http://www.w3.org/XML/1998/namespace}lang", "en")
    seen = set()
    for mapper in idp.mappers.filter(mapper_type__in=_REQUESTING_MAPPERS).order_by("name"):
        config = mapper.config or {}
        wanted = (config.get("attribute.name") or "", config.get("attribute.friendly.name") or "")
        if not wanted[0] or wanted in seen:
            continue
        seen.add(wanted)
        _el(service, "RequestedAttribute", Name=wanted[0], NameFormat=c.ATTRNAME_BASIC, FriendlyName=wanted[1] or None)


def response(request, realm, idp):
    return HttpResponse(document(request, realm, idp), content_type="application/xml")
