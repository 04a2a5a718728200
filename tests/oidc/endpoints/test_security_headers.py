"""Issue 11 finding 6: the realm's browserSecurityHeaders reach its pages, Keycloak's defaults
when unset, each header as configured (a test per header), none when set to ""."""
import pytest

from .conftest import REDIRECT, url

DEFAULT_CSP = "frame-src 'self'; frame-ancestors 'self'; object-src 'none';"


def login_page(http, realm, **extra):
    page = http.get(url(realm, "auth"), {"client_id": "app", "redirect_uri": REDIRECT, "response_type": "code",
                                         "scope": "openid"}, **extra)
    assert page.status_code == 200, page.content
    return page


def configure(realm, **headers):
    realm.browser_security_headers = headers
    realm.save()


def test_keycloak_defaults_on_the_sign_in_page(http, realm):
    page = login_page(http, realm)
    assert page["Content-Security-Policy"] == DEFAULT_CSP
    assert page["X-Frame-Options"] == "SAMEORIGIN"
    assert page["X-Robots-Tag"] == "none"
    assert page["X-Content-Type-Options"] == "nosniff"
    assert page["Referrer-Policy"] == "same-origin"  # no-referrer, without breaking the form's CSRF check
    assert "Content-Security-Policy-Report-Only" not in page
    assert "Strict-Transport-Security" not in page  # plain HTTP
    assert login_page(http, realm, secure=True)["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"


def test_error_pages_carry_them_too(http, realm):
    page = http.get(url(realm, "auth"), {"client_id": "nobody"})
    assert page.status_code == 400 and page["Content-Security-Policy"] == DEFAULT_CSP


@pytest.mark.parametrize("key, header, value", [
    ("contentSecurityPolicy", "Content-Security-Policy", "default-src 'self'; frame-ancestors 'none';"),
    ("contentSecurityPolicyReportOnly", "Content-Security-Policy-Report-Only", "default-src 'none'"),
    ("xContentTypeOptions", "X-Content-Type-Options", "nosniff"),
    ("referrerPolicy", "Referrer-Policy", "strict-origin"),
    ("xRobotsTag", "X-Robots-Tag", "noindex, nofollow"),
    ("xFrameOptions", "X-Frame-Options", "DENY"),
    ("strictTransportSecurity", "Strict-Transport-Security", "max-age=600"),
])
def test_each_configured_header_takes_effect(http, realm, key, header, value):
    configure(realm, **{key: value})
    assert login_page(http, realm, secure=True)[header] == value


@pytest.mark.parametrize("key, header", [
    ("contentSecurityPolicy", "Content-Security-Policy"),
    ("xRobotsTag", "X-Robots-Tag"),
    ("xFrameOptions", "X-Frame-Options"),
    ("strictTransportSecurity", "Strict-Transport-Security"),
])
def test_an_empty_value_sends_no_header(http, realm, key, header):
    # (Referrer-Policy and X-Content-Type-Options then keep the site-wide ones of Django's
    # SecurityMiddleware, same-origin and nosniff: never weaker than the realm asked.)
    configure(realm, **{key: ""})
    assert header not in login_page(http, realm, secure=True)
