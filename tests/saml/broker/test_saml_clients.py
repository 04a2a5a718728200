"""A SAML client of ours (pysaml2's service provider) whose user signs in through the upstream SAML
identity provider: our IdP answers the SP once the broker has signed the user in, and the SP's
logout goes through the upstream provider before our LogoutResponse goes back to the SP."""
import html
import re
from urllib.parse import parse_qs, urlsplit

from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT

from realms.models import UserSession

from ..sp import form_fields, saml_response_of, send
from .test_end_to_end import ALIAS, app, linked, live_idp, through_upstream  # noqa: F401 (fixtures)


def test_a_saml_clients_user_signs_in_and_out_through_the_upstream(live_idp, sp_factory, browser, base, realm,
                                                                   upstream):
    linked(realm, live_idp())
    # (An entity id without dots: the broker's state is "random.tab.client" and splits on dots.)
    _, sp = sp_factory(entity_id="urn:example:sp")
    request_id, info = sp.prepare_for_authenticate(entityid=f"{base}/realms/acme", binding=BINDING_HTTP_REDIRECT)
    page = browser.get(dict(info["headers"])["Location"], timeout=10)
    link = html.unescape(re.search(r'id="social-upstream" class="social" href="([^"]+)"', page.text).group(1))
    endpoint, fields = through_upstream(browser, browser.get(base + link, timeout=10))
    assert endpoint == f"{base}/realms/acme/broker/{ALIAS}/endpoint"
    action, saml_response, _ = saml_response_of(browser.post(endpoint, data=fields, timeout=10))
    assert action == f"{base}/sp/acs"
    authn = sp.parse_authn_request_response(saml_response, BINDING_HTTP_POST, outstanding={request_id: "/"})
    assert authn.name_id.text == "ada"

    upstream.requests.clear()
    binding, info = sp.global_logout(authn.name_id)[f"{base}/realms/acme"]
    page = send(browser, binding, info)
    assert not UserSession.objects.filter(realm=realm).exists()
    assert page.status_code == 302  # on to the upstream provider first
    post_page = browser.get(page.headers["Location"], timeout=10)
    slo, request_fields = form_fields(post_page.text)
    assert slo == upstream.slo
    endpoint, answer = form_fields(browser.post(slo, data=request_fields, timeout=10).text)
    assert [kind for kind, _ in upstream.requests] == ["LogoutRequest"]
    back = browser.post(endpoint, data=answer, timeout=10)
    # The broker's logout end, then our LogoutResponse to the SP by its Redirect binding.
    location = back.url if back.status_code == 404 else back.headers.get("Location", back.url)
    assert location.startswith(f"{base}/sp/slo?SAMLResponse="), (back.status_code, location)
    query = parse_qs(urlsplit(location).query)
    assert sp.parse_logout_request_response(query["SAMLResponse"][0], BINDING_HTTP_REDIRECT).status_ok()
