"""The SAML client of Keycloak's servlet-saml-service-provider quickstart, imported from its
realm JSON, works: a second real service provider (python3-saml, signatures through python-xmlsec)
signs its requests with the key pair embedded in the client, completes SSO through the Redirect
binding with the login form, checks our signed Response and reads the mapped X.500 attributes,
then logs out."""
import base64
import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.test import Client as HttpClient
from onelogin.saml2.auth import OneLogin_Saml2_Auth
from onelogin.saml2.constants import OneLogin_Saml2_Constants as K
from onelogin.saml2.logout_response import OneLogin_Saml2_Logout_Response
from onelogin.saml2.utils import OneLogin_Saml2_Utils

from realms.models import Client, Event, UserSession
from realms.representation import import_realm
from saml import constants as c

from .sp import form_fields, idp_certificate

REALM_FILE = Path(__file__).resolve().parents[1] / "data" / "keycloak" / "quickstarts-saml-service-provider-realm.json"
SP_BASE = "http://localhost:8080/servlet-saml-service-provider"
IDP = "http://localhost/realms/quickstart"


@pytest.fixture
def quickstart(db):
    from django.core.cache import cache

    from realms.data import realm_cache

    cache.clear()
    realm_cache.clear()
    realm = import_realm(json.loads(REALM_FILE.read_text())).realm
    realm.events_enabled = True
    realm.save()
    return Client.objects.get(realm=realm, client_id="servlet-saml-service-provider")


def _settings(client, idp_cert):
    attributes = client.attributes
    return {
        "strict": True,
        "sp": {"entityId": client.client_id,
               "assertionConsumerService": {"url": f"{SP_BASE}/saml", "binding": K.BINDING_HTTP_POST},
               "singleLogoutService": {"url": f"{SP_BASE}/saml", "binding": K.BINDING_HTTP_REDIRECT},
               "NameIDFormat": c.NAMEID_UNSPECIFIED,
               "x509cert": attributes[c.ATTR_SIGNING_CERTIFICATE],
               "privateKey": attributes["saml.signing.private.key"]},
        "idp": {"entityId": IDP,
                "singleSignOnService": {"url": f"{IDP}/protocol/saml", "binding": K.BINDING_HTTP_REDIRECT},
                "singleLogoutService": {"url": f"{IDP}/protocol/saml", "binding": K.BINDING_HTTP_REDIRECT},
                "x509cert": idp_cert},
        "security": {"authnRequestsSigned": True, "logoutRequestSigned": True, "wantMessagesSigned": True,
                     "wantAssertionsSigned": False, "signatureAlgorithm": K.RSA_SHA256,
                     "digestAlgorithm": K.SHA256, "requestedAuthnContext": False,
                     # Keycloak's role list mapper writes one Attribute per role (single=false).
                     "allowRepeatAttributeName": True},
    }


def _sp(client, idp_cert, post_data=None):
    request = {"https": "off", "http_host": "localhost:8080",
               "script_name": "/servlet-saml-service-provider/saml", "get_data": {}, "post_data": post_data or {}}
    return OneLogin_Saml2_Auth(request, _settings(client, idp_cert))


def _local(url):
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


def test_quickstart_client_signs_in_and_out_with_python3_saml(quickstart):
    http = HttpClient(SERVER_NAME="localhost")  # python3-saml wants a host name it accepts
    idp_cert = idp_certificate(http.get("/realms/quickstart/protocol/saml/descriptor").content.decode())
    sp = _sp(quickstart, idp_cert)
    login_url = sp.login(return_to=f"{SP_BASE}/")
    request_id = sp.get_last_request_id()

    page = http.get(_local(login_url))
    assert page.status_code == 200
    action = re.search(r'<form method="post" action="([^"]+)"', page.content.decode()).group(1).replace("&amp;", "&")
    answer = http.post(action, {"username": "alice", "password": "alice"})
    acs, fields = form_fields(answer.content.decode())
    assert acs == f"{SP_BASE}/saml"  # the requested ACS URL, allowed by the client's redirect URI wildcard

    sp = _sp(quickstart, idp_cert, post_data={"SAMLResponse": fields["SAMLResponse"]})
    sp.process_response(request_id=request_id)
    assert sp.get_errors() == [], sp.get_last_error_reason()
    assert sp.is_authenticated() and sp.get_nameid() == "alice"
    attributes = sp.get_attributes()
    assert attributes["urn:oid:1.2.840.113549.1.9.1"] == ["alice@keycloak.org"]
    assert attributes["urn:oid:2.5.4.42"] == ["Alice"] and attributes["urn:oid:2.5.4.4"] == ["Liddel"]
    assert sorted(attributes["Role"]) == ["manage-account", "manage-account-links", "offline_access", "user"]

    logout_url = sp.logout(name_id=sp.get_nameid(), session_index=sp.get_session_index())
    logout_request_id = sp.get_last_request_id()
    answer = http.get(_local(logout_url))
    # No logout URL registered: Keycloak's fallback is the admin URL, with the forced POST binding.
    action, fields = form_fields(answer.content.decode())
    assert action == quickstart.admin_url
    response = OneLogin_Saml2_Logout_Response(sp.get_settings(), fields["SAMLResponse"])
    assert response.get_status() == K.STATUS_SUCCESS
    assert response.document.get("InResponseTo") == logout_request_id
    assert not UserSession.objects.exists()
    assert Event.objects.filter(type="LOGOUT", client_id=quickstart.client_id).exists()
    assert OneLogin_Saml2_Utils.validate_sign(base64.b64decode(fields["SAMLResponse"]),
                                              cert=OneLogin_Saml2_Utils.format_cert(idp_cert),
                                              xpath="/samlp:LogoutResponse/ds:Signature", raise_exceptions=True)
