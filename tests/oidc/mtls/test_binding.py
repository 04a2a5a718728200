"""Certificate-bound tokens (RFC 8705 §3): ``cnf.x5t#S256`` in the access and refresh tokens of a
client with ``tls.client.certificate.bound.access.tokens``, whatever its authentication; each
later use proves the same certificate (refresh: invalid_grant; userinfo and the resource-server
helper: 401 invalid_token); introspection shows the binding; nonsense settings are refused."""
import pytest
import requests
from django.http import JsonResponse
from django.test import RequestFactory

from oidc.codes import issue_code
from oidc.resource_server import require_bearer
from realms.models import Client, ProtocolMapper, User
from realms.representation import RepresentationError, import_realm
from realms.sso import sessions

from .conftest import META, PROXY, REDIRECT, SECRET, Pki, claims, client_credentials, representation, url, with_cert

pytestmark = pytest.mark.django_db
MISMATCH = "Client certificate missing, or its thumbprint and the token's do not match"


def code(realm, client_id):
    client = Client.objects.get(realm=realm, client_id=client_id)
    user = User.objects.get(realm=realm, username="alice")
    user_session = sessions.create_user_session(realm, user, auth_methods=("pwd",))
    sessions.get_or_create_client_session(user_session, client, redirect_uri=REDIRECT, scope="openid")
    return issue_code(client=client, user_session=user_session, redirect_uri=REDIRECT, scope="openid",
                      nonce="n", code_challenge="", code_challenge_method="")


def code_grant(http, realm, client_id, issued, **form):
    data = {"grant_type": "authorization_code", "code": code(realm, client_id), "redirect_uri": REDIRECT,
            "client_id": client_id, **form}
    response = http.post(url(realm, "token"), data, **with_cert(issued))
    assert response.status_code == 200, response.content
    return response.json()


def refresh(http, realm, client_id, token, issued, **form):
    return http.post(url(realm, "token"), {"grant_type": "refresh_token", "refresh_token": token,
                                           "client_id": client_id, **form}, **with_cert(issued))


def test_access_and_refresh_tokens_are_bound(http, realm, proxied, tls_cert):
    body = code_grant(http, realm, "tls-app", tls_cert)
    assert body["token_type"] == "Bearer"
    assert claims(body["access_token"])["cnf"] == {"x5t#S256": tls_cert.x5t}
    assert claims(body["refresh_token"])["cnf"] == {"x5t#S256": tls_cert.x5t}
    assert "cnf" not in claims(body["id_token"])


@pytest.mark.parametrize("client_id, form", [("secret-app", {"client_secret": SECRET}), ("public-app", {})])
def test_binding_is_independent_of_client_authentication(http, realm, proxied, pki, client_id, form):
    issued = pki.issue("CN=anyone")
    body = code_grant(http, realm, client_id, issued, **form)
    assert claims(body["access_token"])["cnf"] == {"x5t#S256": issued.x5t}
    again = refresh(http, realm, client_id, body["refresh_token"], issued, **form)
    assert again.status_code == 200, again.content
    assert claims(again.json()["access_token"])["cnf"] == {"x5t#S256": issued.x5t}


def test_a_client_asking_for_bound_tokens_needs_a_certificate(http, realm, proxied):
    response = http.post(url(realm, "token"), {"grant_type": "client_credentials", "client_id": "secret-app",
                                               "client_secret": SECRET})
    assert response.status_code == 400
    assert response.json() == {"error": "invalid_request",
                               "error_description": "Client Certification missing for MTLS HoK Token Binding"}


def test_unbound_clients_get_unbound_tokens(http, realm, proxied, self_cert):
    body = client_credentials(http, realm, "self-app", self_cert).json()
    assert "cnf" not in claims(body["access_token"])


def test_refresh_with_another_certificate_or_none_is_invalid_grant(http, realm, proxied, pki):
    issued = pki.issue("CN=holder")
    body = code_grant(http, realm, "public-app", issued)
    for other in (pki.issue("CN=holder"), None):
        response = refresh(http, realm, "public-app", body["refresh_token"], other)
        if other is None:  # the client's binding asks for a certificate before the refresh is read
            assert response.json()["error"] == "invalid_request"
            continue
        assert response.status_code == 400
        assert response.json() == {"error": "invalid_grant", "error_description": MISMATCH}
    assert refresh(http, realm, "public-app", body["refresh_token"], issued).status_code == 200


def test_a_bound_refresh_token_needs_its_certificate_after_the_client_stops_binding(http, realm, proxied, pki):
    issued = pki.issue("CN=holder")
    body = code_grant(http, realm, "public-app", issued)
    client = Client.objects.get(realm=realm, client_id="public-app")
    client.attributes = {**client.attributes, "tls.client.certificate.bound.access.tokens": "false"}
    client.save()
    from realms.data import realm_cache
    realm_cache.clear()
    response = refresh(http, realm, "public-app", body["refresh_token"], None)
    assert response.json() == {"error": "invalid_grant", "error_description": MISMATCH}


def test_userinfo_needs_the_certificate_of_a_bound_token(http, realm, proxied, tls_cert, pki):
    token = code_grant(http, realm, "tls-app", tls_cert)["access_token"]
    bearer = f"Bearer {token}"
    ok = http.get(url(realm, "userinfo"), HTTP_AUTHORIZATION=bearer, **with_cert(tls_cert))
    assert ok.status_code == 200 and ok.json()["preferred_username"] == "alice"
    for issued in (None, pki.issue(TLS_DN_OTHER)):
        response = http.get(url(realm, "userinfo"), HTTP_AUTHORIZATION=bearer, **with_cert(issued))
        assert response.status_code == 401
        assert response.json()["error"] == "invalid_token"
        assert response["WWW-Authenticate"].startswith("Bearer") and 'error="invalid_token"' in response["WWW-Authenticate"]
    # From an untrusted peer the header is no certificate.
    response = http.get(url(realm, "userinfo"), HTTP_AUTHORIZATION=bearer, REMOTE_ADDR="203.0.113.9", secure=True,
                        **with_cert(tls_cert))
    assert response.status_code == 401


TLS_DN_OTHER = "CN=tls-app,O=Example Org,C=FR"


def test_introspection_shows_the_binding(http, realm, proxied, tls_cert):
    token = code_grant(http, realm, "tls-app", tls_cert)["access_token"]
    body = http.post(url(realm, "token/introspect"), {"token": token, "client_id": "tls-app"},
                     **with_cert(tls_cert)).json()
    assert body["active"] is True and body["cnf"] == {"x5t#S256": tls_cert.x5t} and body["token_type"] == "Bearer"


@pytest.mark.parametrize("attributes, message", [
    ({"tls.client.certificate.bound.access.tokens": "yes"}, "tls.client.certificate.bound.access.tokens"),
    ({"x509.allow.regex.pattern.comparison": "maybe"}, "x509.allow.regex.pattern.comparison"),
    ({"x509.subjectdn": "CN=(unclosed", "x509.allow.regex.pattern.comparison": "true"},
     "x509.subjectdn is not a valid pattern"),
    ({"x509.subjectdn": "not a dn", "x509.allow.regex.pattern.comparison": "false"},
     "x509.subjectdn is not a valid distinguished name"),
])
def test_nonsense_settings_are_refused_at_import(db, self_cert, attributes, message):
    rep = representation("bad-mtls", self_cert)
    rep["clients"][0]["attributes"] = {**rep["clients"][0]["attributes"], **attributes}
    with pytest.raises(RepresentationError, match=message.replace("(", r"\(")):
        import_realm(rep)


# The resource-server helper ------------------------------------------------------------------------

AUDIENCE = "orders"


def test_resource_server_helper_checks_the_certificate(live_server, realm, proxied, tls_cert, pki):
    ProtocolMapper.objects.create(client=Client.objects.get(realm=realm, client_id="tls-app"), name="orders",
                                  protocol_mapper="oidc-audience-mapper",
                                  config={"included.custom.audience": AUDIENCE, "access.token.claim": "true"})
    response = requests.post(f"{live_server.url}{url(realm, 'token')}",
                             data={"grant_type": "client_credentials", "client_id": "tls-app"},
                             headers={"ssl-client-cert": tls_cert.nginx()}, timeout=10)
    assert response.status_code == 200, response.text
    token = response.json()["access_token"]

    @require_bearer(issuer=f"{live_server.url}/realms/{realm.name}", audience=AUDIENCE)
    def view(request):
        return JsonResponse({"sub": request.token["sub"]})

    def call(issued, peer=PROXY):
        return view(RequestFactory().get("/orders", HTTP_AUTHORIZATION=f"Bearer {token}", REMOTE_ADDR=peer,
                                         **({META: issued.nginx()} if issued else {})))

    assert call(tls_cert).status_code == 200
    for refused in (call(None), call(pki.issue(TLS_DN_OTHER)), call(tls_cert, peer="203.0.113.9")):
        assert refused.status_code == 401
        assert refused["WWW-Authenticate"].startswith("Bearer") and 'error="invalid_token"' in refused["WWW-Authenticate"]
