"""Sending a message to a SAML client through the browser: an auto-submitted form (HTTP-POST)
or a redirect (HTTP-Redirect, signed on the query string when ``sign`` is set; any XML
signature of the message itself is left out there, bindings §3.4.4.1)."""
from django.http import HttpResponseRedirect

from realms.http import themes

from . import constants as c
from . import keys, signatures, xml


def sign_message(realm, client, element):
    credential = keys.signing_credential(realm)
    return signatures.sign_element(element, key=credential.private_key, cert=credential.certificate,
                                   algorithm=signatures.client_algorithm(client), key_name=_key_name(client, credential))


def _key_name(client, credential):
    # Keycloak's default KeyName transformer is KEY_ID: the key's kid; NONE leaves it out.
    transformer = (client.attributes or {}).get(c.ATTR_KEYINFO_KEYNAME, "KEY_ID")
    return credential.kid if transformer == "KEY_ID" else None


def redirect_url(realm, client, url, param, element, relay_state, sign):
    params = [(param, xml.encode_redirect(xml.serialize(element))), ("RelayState", relay_state)]
    if sign:
        query = signatures.sign_query(params, keys.signing_credential(realm).private_key,
                                      signatures.client_algorithm(client))
    else:
        from urllib.parse import urlencode

        query = urlencode([(k, v) for k, v in params if v])
    return f"{url}{'&' if '?' in url else '?'}{query}"


def deliver(request, realm, client, *, url, binding, param, element, relay_state, sign):
    """The browser response carrying ``element`` (a Response, LogoutRequest or LogoutResponse)
    to ``url``. With POST, ``element`` is signed here when ``sign`` is set."""
    if binding == c.BINDING_REDIRECT:
        return HttpResponseRedirect(redirect_url(realm, client, url, param, element, relay_state, sign))
    if sign:
        element = sign_message(realm, client, element)
    fields = [(param, xml.encode_post(xml.serialize(element)))]
    if relay_state:
        fields.append(("RelayState", relay_state))
    return themes.render(request, realm, "form-post.html", {"action": url, "fields": fields})
