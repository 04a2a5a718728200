"""The console offers Keycloak's X509 Certificate authenticator (and the self-signed one) with its
Subject DN, and the certificate-bound tokens switch; what it saves is what the token endpoint reads."""
import pytest
from django.test import Client as HttpClient

from realms.models import Client
from tests.realms.test_admin import errors_of, read_form, submit
from tests.realms.test_console import acme, console, master  # noqa: F401 (fixtures)
from tests.realms.test_console_forms import change_url

from .conftest import TLS_DN, claims, client_credentials

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]


def test_console_configures_tls_client_auth_and_bound_tokens(console, acme, proxied, tls_cert):  # noqa: F811
    app = Client(realm=acme, client_id="svc", service_accounts_enabled=True)
    app.set_secret("console-secret-" + "x" * 20)
    app.save()
    page = console.get(change_url(app)).content.decode()
    assert "X509 Certificate" in page and "Subject DN" in page
    assert "OAuth 2.0 Mutual TLS Certificate Bound Access Tokens Enabled" in page
    assert "tls_bound_access_tokens" not in read_form(page, "client_form")
    response = submit(console, change_url(app), "client_form", {
        "client_authenticator_type": "client-x509", "x509_subject_dn": TLS_DN, "tls_bound_access_tokens": "on"})
    assert not errors_of(response), errors_of(response)
    app.refresh_from_db()
    assert app.client_authenticator_type == "client-x509"
    assert app.attributes["x509.subjectdn"] == TLS_DN
    assert app.attributes["tls.client.certificate.bound.access.tokens"] == "true"
    response = client_credentials(HttpClient(), acme, "svc", tls_cert)
    assert response.status_code == 200, response.content
    assert claims(response.json()["access_token"])["cnf"] == {"x5t#S256": tls_cert.x5t}
