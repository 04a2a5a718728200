"""The admin console's SAML section: Keycloak's SAML settings edited as fields, stored as the
client's attributes under Keycloak's keys; bad certificates refused; OIDC clients unaffected."""
import pytest

from realms.models import Client
from saml import constants as c
from tests.realms.test_admin import acme, console, errors_of, master, read_form, submit  # noqa: F401  (fixtures)

from .sp import key_pair

pytestmark = pytest.mark.django_db

ENTITY = "https://sp.example/metadata"


def test_saml_client_added_and_edited_in_console(console, acme):  # noqa: F811
    cert_b64 = key_pair("console-sp")[2]
    console.get(f"/admin/master/console/realms/client/?realm__id__exact={acme.pk}")
    response = submit(console, "/admin/master/console/realms/client/add/?protocol=saml", "client_form", {
        "client_id": ENTITY, "protocol": "saml", "public_client": "on",
        "saml_signing_certificate": "\n".join(cert_b64[i:i + 64] for i in range(0, len(cert_b64), 64)),
        "saml_acs_post": "https://sp.example/acs", "saml_name_id_format": "email",
        "saml_assertion_signature": "on", "saml_encrypt": "on", "saml_idp_initiated_name": "wiki",
    })
    assert not errors_of(response), errors_of(response)
    client = Client.objects.get(realm=acme, client_id=ENTITY)
    attributes = client.attributes
    assert attributes[c.ATTR_SIGNING_CERTIFICATE] == cert_b64  # line breaks dropped
    assert attributes[c.ATTR_ACS_POST] == "https://sp.example/acs"
    assert attributes[c.ATTR_NAME_ID_FORMAT] == "email" and attributes[c.ATTR_IDP_INITIATED_NAME] == "wiki"
    # Keycloak's defaults for a new SAML client are what the form starts with.
    assert (attributes[c.ATTR_SERVER_SIGNATURE], attributes[c.ATTR_CLIENT_SIGNATURE],
            attributes[c.ATTR_FORCE_POST_BINDING]) == ("true", "true", "true")
    assert (attributes[c.ATTR_ASSERTION_SIGNATURE], attributes[c.ATTR_ENCRYPT]) == ("true", "true")
    assert c.ATTR_SLO_SOAP not in attributes  # empty fields are left out
    assert set(client.scope_links.values_list("client_scope__name", flat=True)) == set()  # bare realm

    page = console.get(f"/admin/master/console/realms/client/{client.pk}/change/").content.decode()
    assert "SAML capabilities" in page and read_form(page, "client_form")["saml_encrypt"] == ["on"]

    response = submit(console, f"/admin/master/console/realms/client/{client.pk}/change/", "client_form",
                      {"saml_signing_certificate": "not a certificate"})
    assert "Not an X.509 certificate." in response.content.decode()
    response = submit(console, f"/admin/master/console/realms/client/{client.pk}/change/", "client_form",
                      {"saml_signing_certificate": "", "saml_encrypt": None})
    assert "Required when client signatures are required" in response.content.decode()
    client.refresh_from_db()
    assert client.attributes[c.ATTR_SIGNING_CERTIFICATE] == cert_b64


def test_oidc_client_page_has_no_saml_section(console, acme):  # noqa: F811
    client = Client.objects.create(realm=acme, client_id="web", attributes={"pkce.code.challenge.method": "S256"})
    assert "SAML capabilities" not in console.get(f"/admin/master/console/realms/client/{client.pk}/change/").content.decode()
    response = submit(console, f"/admin/master/console/realms/client/{client.pk}/change/", "client_form", {"name": "Web"})
    assert not errors_of(response)
    client.refresh_from_db()
    assert client.attributes == {"pkce.code.challenge.method": "S256"} and client.name == "Web"
