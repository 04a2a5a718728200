"""Issue 11 finding 3: the realm's sslRequired is enforced on every realm endpoint (Keycloak's
none / external / all), HTTPS is believed from trusted proxies only, and HSTS goes with HTTPS."""
import importlib

import pytest

from .conftest import REDIRECT, SECRET, basic, token_url, url

OUTSIDE, PRIVATE, PROXY = "203.0.113.5", "10.1.2.3", "192.0.2.10"
REFUSED_JSON = {"error": "invalid_request", "error_description": "HTTPS required"}


def cc(http, realm, **extra):
    return http.post(token_url(realm), {"grant_type": "client_credentials"},
                     HTTP_AUTHORIZATION=basic("app", SECRET), **extra)


def with_ssl(realm, value):
    realm.ssl_required = value
    realm.save()
    return realm


def test_all_refuses_plain_http_even_from_loopback(http, realm):
    with_ssl(realm, "all")
    resp = cc(http, realm)
    assert resp.status_code == 403 and resp.json() == REFUSED_JSON
    for suffix in ("token/introspect", "revoke", "userinfo", "certs"):
        assert http.post(url(realm, suffix)).json() == REFUSED_JSON
    assert http.get(f"/realms/{realm.name}/.well-known/openid-configuration").json() == REFUSED_JSON
    assert cc(http, realm, secure=True).status_code == 200


@pytest.mark.parametrize("path", ["protocol/openid-connect/auth", "login-actions/authenticate?tab=x",
                                  "protocol/saml", "protocol/openid-connect/logout"])
def test_browser_endpoints_answer_an_https_required_page(http, realm, path):
    with_ssl(realm, "all")
    resp = http.get(f"/realms/{realm.name}/{path}")
    assert resp.status_code == 403 and resp["Content-Type"].startswith("text/html")
    assert "HTTPS required" in resp.content.decode()


def test_external_allows_plain_http_from_local_addresses_only(http, realm):
    with_ssl(realm, "external")
    assert cc(http, realm).status_code == 200  # loopback
    assert cc(http, realm, REMOTE_ADDR=PRIVATE).status_code == 200  # site-local
    assert cc(http, realm, REMOTE_ADDR="192.168.7.7").status_code == 200
    assert cc(http, realm, REMOTE_ADDR=OUTSIDE).json() == REFUSED_JSON
    assert cc(http, realm, REMOTE_ADDR="fd00::1").status_code == 403  # not site-local in Keycloak's rule
    assert cc(http, realm, REMOTE_ADDR=OUTSIDE, secure=True).status_code == 200
    page = http.get(url(realm, "auth"), {"client_id": "app", "redirect_uri": REDIRECT, "response_type": "code"},
                    REMOTE_ADDR=OUTSIDE)
    assert page.status_code == 403 and "HTTPS required" in page.content.decode()


def test_none_allows_plain_http_from_anywhere(http, realm):
    with_ssl(realm, "none")
    assert cc(http, realm, REMOTE_ADDR=OUTSIDE).status_code == 200


def test_forwarded_proto_is_believed_from_trusted_proxies_only(http, realm, settings):
    with_ssl(realm, "all")
    # Anyone may send the header; without trusted proxies it means nothing.
    assert cc(http, realm, HTTP_X_FORWARDED_PROTO="https").json() == REFUSED_JSON
    settings.IDP_TRUSTED_PROXIES = [PROXY]
    assert cc(http, realm, REMOTE_ADDR=OUTSIDE, HTTP_X_FORWARDED_PROTO="https").json() == REFUSED_JSON
    assert cc(http, realm, REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_PROTO="https").status_code == 200
    # external: the client behind the proxy is what counts, not the proxy's (private) address.
    with_ssl(realm, "external")
    behind = cc(http, realm, REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=OUTSIDE, HTTP_X_FORWARDED_PROTO="http")
    assert behind.json() == REFUSED_JSON
    assert cc(http, realm, REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=PRIVATE).status_code == 200


def test_hsts_only_on_https_as_trusted_configuration_says(http, realm, settings):
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.IDP_TRUSTED_PROXIES = [PROXY]
    with_ssl(realm, "none")
    discovery = f"/realms/{realm.name}/.well-known/openid-configuration"
    trusted = http.get(discovery, REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_PROTO="https")
    assert trusted["Strict-Transport-Security"] == "max-age=31536000"
    assert trusted.json()["issuer"].startswith("https://")
    spoofed = http.get(discovery, REMOTE_ADDR=OUTSIDE, HTTP_X_FORWARDED_PROTO="https")
    assert "Strict-Transport-Security" not in spoofed and spoofed.json()["issuer"].startswith("http://")


def test_production_settings_send_hsts_and_do_not_trust_the_proto_header_blindly():
    prod = importlib.import_module("idp.settings.prod")
    assert prod.SECURE_HSTS_SECONDS >= 31536000
    assert not hasattr(prod, "SECURE_PROXY_SSL_HEADER")
    # Before anything that asks whether the request is secure (only the request timer, the request
    # span, the log lines' request id and the NUL guard, which touch no database and build no URL,
    # come first).
    assert prod.MIDDLEWARE[:6] == ["idp.metrics.RequestMetricsMiddleware", "idp.tracing.TracingMiddleware",
                                   "idp.logs.RequestContextMiddleware",
                                   "realms.http.input_guard.NulGuardMiddleware",
                                   "realms.http.transport.TransportSecurityMiddleware",
                                   "django.middleware.security.SecurityMiddleware"]
