"""The console's OpenID Connect identity provider form has Keycloak's JWT authorization grant
settings; what it saves is what the grant reads (Keycloak's config keys)."""
import pytest
from django.urls import reverse

from realms.models import IdentityProvider
from tests.realms.test_admin import errors_of, read_form, submit
from tests.realms.test_console import acme, console, master  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]
ADD = reverse("admin:realms_identityprovider_add")
LIST = reverse("admin:realms_identityprovider_changelist")
FORM = "identityprovider_form"
LABELS = ("JWT Authorization Grant", "Allow assertion reuse", "Max allowed assertion expiration",
          "Assertion signature algorithm", "Limit access token expiration")


def test_oidc_form_edits_the_grant_settings(console, acme):  # noqa: F811
    console.get(LIST, {"realm__id__exact": acme.pk})
    url = f"{ADD}?provider_id=oidc"
    page = console.get(url).content.decode()
    for label in LABELS:
        assert label in page, label
    assert read_form(page, FORM)["config_jwtAuthorizationGrantMaxAllowedAssertionExpiration"] == ["300"]
    resp = submit(console, url, FORM, {
        "alias": "partner", "config_authorizationUrl": "https://partner.example/auth",
        "config_tokenUrl": "https://partner.example/token", "config_clientId": "c", "config_clientSecret": "s",
        "config_issuer": "https://partner.example", "config_useJwksUrl": "on",
        "config_jwksUrl": "https://partner.example/jwks", "config_jwtAuthorizationGrantEnabled": "on",
        "config_jwtAuthorizationGrantMaxAllowedAssertionExpiration": "120",
        "config_jwtAuthorizationGrantAssertionSignatureAlg": "ES256",
        "config_jwtAuthorizationGrantLimitAccessTokenExp": "on"})
    assert not errors_of(resp), errors_of(resp)
    config = IdentityProvider.objects.get(realm=acme, alias="partner").config
    assert config["jwtAuthorizationGrantEnabled"] == "true"
    assert config["jwtAuthorizationGrantMaxAllowedAssertionExpiration"] == "120"
    assert config["jwtAuthorizationGrantAssertionSignatureAlg"] == "ES256"
    assert config["jwtAuthorizationGrantLimitAccessTokenExp"] == "true"
    assert config.get("jwtAuthorizationGrantAssertionReuseAllowed", "false") == "false"
