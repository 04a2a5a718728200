"""IdP-initiated sign-in through the provider (Keycloak's ``/broker/{alias}/endpoint/clients/
{url_name}``): pysaml2's unsolicited Response signs the linked user in at our SAML client with that
IdP-initiated SSO URL name, once; an answer naming a request, or replayed, is refused."""
import base64

from realms.models import FederatedIdentity
from realms.users.accounts import create_user

from ..conftest import make_saml_client
from ..sp import form_fields
from .conftest import ALIAS

ENDPOINT = f"http://testserver/realms/acme/broker/{ALIAS}/endpoint/clients/portal"


def post(rf, saml_type, realm, idp, text):
    request = rf.post(f"/realms/acme/broker/{ALIAS}/endpoint/clients/portal",
                      {"SAMLResponse": base64.b64encode(text.encode()).decode()})
    return saml_type.endpoint(request, realm, idp, "clients/portal")


def test_unsolicited_response_signs_in_at_the_saml_client_once(make_idp, upstream, rf, realm, saml_type):
    idp = make_idp()
    user = create_user(realm, "ada")
    FederatedIdentity.objects.create(realm=realm, user=user, identity_provider=idp, subject="u-1001", user_name="u-1001")
    make_saml_client(realm, "urn:example:portal", "http://testserver", upstream.cert_b64,
                     saml_idp_initiated_sso_url_name="portal")
    text = upstream.authn_response(None, ENDPOINT, "http://testserver/realms/acme")
    answer = post(rf, saml_type, realm, idp, text)
    assert answer.status_code == 200, answer.content[:500]
    action, fields = form_fields(answer.content.decode())
    assert action == "http://testserver/sp/acs" and "SAMLResponse" in fields
    replayed = post(rf, saml_type, realm, idp, text)
    assert replayed.status_code == 400 and b"Invalid requester" in replayed.content


def test_an_answer_to_a_request_is_not_unsolicited(make_idp, upstream, rf, realm, saml_type):
    idp = make_idp()
    make_saml_client(realm, "urn:example:portal", "http://testserver", upstream.cert_b64,
                     saml_idp_initiated_sso_url_name="portal")
    text = upstream.authn_response("ID_some_request", ENDPOINT, "http://testserver/realms/acme")
    assert post(rf, saml_type, realm, idp, text).status_code == 400
    unknown = rf.post(f"/realms/acme/broker/{ALIAS}/endpoint/clients/nobody", {"SAMLResponse": "x"})
    assert saml_type.endpoint(unknown, realm, idp, "clients/nobody").status_code == 400
