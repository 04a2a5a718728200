"""The console's DPoP switches are Keycloak's client attribute (and ours for nonces), and what they
save is what the token endpoint reads."""
import pytest
from django.test import Client as HttpClient

from oidc import dpop
from realms.models import Client
from tests.realms.test_admin import errors_of, read_form, submit
from tests.realms.test_console import acme, console, master  # noqa: F401 (fixtures)
from tests.realms.test_console_forms import change_url

from .conftest import Prover

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]
SECRET = "console-secret-" + "x" * 20


def test_switches_save_the_attributes_the_token_endpoint_reads(console, acme):  # noqa: F811
    app = Client(realm=acme, client_id="svc", service_accounts_enabled=True)
    app.set_secret(SECRET)
    app.save()
    page = console.get(change_url(app)).content.decode()
    assert "OAuth 2.0 DPoP Bound Access Tokens Enabled" in page and "DPoP nonce required" in page
    assert "dpop_bound_access_tokens" not in read_form(page, "client_form")
    response = submit(console, change_url(app), "client_form", {"dpop_bound_access_tokens": "on",
                                                                "dpop_nonce_required": "on"})
    assert not errors_of(response), errors_of(response)
    app.refresh_from_db()
    assert app.attributes[dpop.REQUIRE_DPOP] == "true" and app.attributes[dpop.REQUIRE_NONCE] == "true"

    http, url = HttpClient(), f"http://testserver/realms/{acme.name}/protocol/openid-connect/token"
    no_proof = http.post(url, {"grant_type": "client_credentials"}, HTTP_AUTHORIZATION=_basic())
    assert no_proof.json()["error"] == "invalid_dpop_proof"
    no_nonce = http.post(url, {"grant_type": "client_credentials"}, HTTP_AUTHORIZATION=_basic(),
                         HTTP_DPOP=Prover().proof("POST", url))
    assert no_nonce.json()["error"] == "use_dpop_nonce"

    response = submit(console, change_url(app), "client_form", {"dpop_bound_access_tokens": None,
                                                                "dpop_nonce_required": None})
    assert not errors_of(response), errors_of(response)
    app.refresh_from_db()
    assert app.attributes[dpop.REQUIRE_DPOP] == "false"
    assert http.post(url, {"grant_type": "client_credentials"},
                     HTTP_AUTHORIZATION=_basic()).json()["token_type"] == "Bearer"


def _basic():
    from tests.oidc.endpoints.conftest import basic
    return basic("svc", SECRET)
