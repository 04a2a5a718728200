"""Sending a message through the browser: an auto-submitted form (HTTP-POST) or a redirect
(HTTP-Redirect, signed on the query string when ``sign`` is set; any XML signature of the message
itself is left out there, bindings §3.4.4.1).

``deliver`` sends to a SAML client with the client's signing settings; ``send`` is the same with
the settings given, which the SAML identity provider type of brokering uses towards an upstream
identity provider (its ``signatureAlgorithm`` and KeyName transformer)."""
from urllib.parse import urlencode

from django.http import HttpResponseRedirect

from realms.http import themes

from . import constants as c
from . import keys, signatures, xml


def key_name(transformer, credential):
    """Keycloak's XmlKeyInfoKeyNameTransformer: KEY_ID (the key's kid), CERT_SUBJECT (the
    certificate's subject), NONE (no KeyName)."""
    if transformer == "KEY_ID":
        return credential.kid
    if transformer == "CERT_SUBJECT":
        return credential.certificate.subject.rfc4514_string()
    return None


def sign_with(realm, element, *, algorithm, transformer):
    credential = keys.signing_credential(realm)
    return signatures.sign_element(element, key=credential.private_key, cert=credential.certificate,
                                   algorithm=algorithm, key_name=key_name(transformer, credential))


def _transformer(client):
    # A client's default KeyName transformer is KEY_ID: the key's kid; NONE leaves it out.
    return (client.attributes or {}).get(c.ATTR_KEYINFO_KEYNAME, "KEY_ID")


def sign_message(realm, client, element):
    return sign_with(realm, element, algorithm=signatures.client_algorithm(client), transformer=_transformer(client))


def signed_redirect_url(realm, url, param, element, relay_state, *, sign, algorithm):
    params = [(param, xml.encode_redirect(xml.serialize(element))), ("RelayState", relay_state)]
    if sign:
        query = signatures.sign_query(params, keys.signing_credential(realm).private_key, algorithm)
    else:
        query = urlencode([(k, v) for k, v in params if v])
    return f"{url}{'&' if '?' in url else '?'}{query}"


def redirect_url(realm, client, url, param, element, relay_state, sign):
    return signed_redirect_url(realm, url, param, element, relay_state, sign=sign,
                               algorithm=signatures.client_algorithm(client))


def send(request, realm, *, url, binding, param, element, relay_state, sign, algorithm, transformer):
    """The browser response carrying ``element`` to ``url`` by ``binding``, signed as told."""
    if binding == c.BINDING_REDIRECT:
        return HttpResponseRedirect(signed_redirect_url(realm, url, param, element, relay_state, sign=sign,
                                                        algorithm=algorithm))
    if sign:
        element = sign_with(realm, element, algorithm=algorithm, transformer=transformer)
    fields = [(param, xml.encode_post(xml.serialize(element)))]
    if relay_state:
        fields.append(("RelayState", relay_state))
    return themes.render(request, realm, "form-post.html", {"action": url, "fields": fields})


def deliver(request, realm, client, *, url, binding, param, element, relay_state, sign):
    """The browser response carrying ``element`` (a Response, LogoutRequest or LogoutResponse)
    to a client's ``url``. With POST, ``element`` is signed here when ``sign`` is set."""
    return send(request, realm, url=url, binding=binding, param=param, element=element, relay_state=relay_state,
                sign=sign, algorithm=signatures.client_algorithm(client), transformer=_transformer(client))
