"""The console's identity providers (realms.admin.identity_providers): the list and "Add provider"
by type, each type's form with Keycloak's config keys, saved through realms.brokering.admin (its
checks, messages and admin events), the client secret write-only, metadata imported from a URL,
enable and disable, delete; the Mappers tab (add with a compatible type, edit, delete); and a
user's identity provider links (listed, unlinked)."""
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.urls import reverse

from realms.models import Event, FederatedIdentity, IdentityProvider, IdentityProviderMapper, Role
from realms.users.accounts import create_user

from .test_admin import errors_of, read_form, select_options, submit
from .test_console import acme, alice, console, master  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]
ADD = reverse("admin:realms_identityprovider_add")
LIST = reverse("admin:realms_identityprovider_changelist")
FORM = "identityprovider_form"
SAML_SSO = "https://idp.partner.example/sso"
SECRET = "s3cret-never-shown"


def in_acme(console, acme):  # noqa: F811
    console.get(LIST, {"realm__id__exact": acme.pk})


def admin_events(realm, resource_type):
    return list(Event.objects.filter(realm=realm, kind=Event.ADMIN, resource_type=resource_type)
                .order_by("time").values_list("type", "resource_path"))


def saml_provider(acme, alias="partner", **config):  # noqa: F811
    return IdentityProvider.objects.create(realm=acme, alias=alias, provider_id="saml", display_name="Partner",
                                           config={"singleSignOnServiceUrl": SAML_SSO, "syncMode": "IMPORT", **config})


def test_navigation_list_and_add_provider_by_type(console, acme):  # noqa: F811
    in_acme(console, acme)
    index = console.get(reverse("admin:index")).content.decode()
    assert ">Identity providers<" in index
    saml_provider(acme)
    page = console.get(LIST).content.decode()
    assert "Partner" in page and "SAML v2.0" in page
    assert f'href="{ADD}?provider_id=saml"' in page  # "Add provider" offers each registered type
    assert re.search(r"<h1>Identity providers</h1>", page)
    form = console.get(f"{ADD}?provider_id=saml").content.decode()
    assert "<h1>Create identity provider</h1>" in form
    for label in ("Single Sign-On service URL", "NameID policy format", "Want AuthnRequests signed", "Sync mode",
                  "First login flow override", "Post login flow", "Trust Email", "Hide on login page"):
        assert label in form, label
    # The flows offered are the realm's own top-level flows.
    assert "first broker login" in select_options(form, "first_broker_login_flow_alias")


def test_create_edit_and_delete_a_saml_provider_through_the_form(console, acme):  # noqa: F811
    in_acme(console, acme)
    url = f"{ADD}?provider_id=saml"
    resp = submit(console, url, FORM, {"alias": "partner", "display_name": "Partner SSO",
                                       "config_singleSignOnServiceUrl": SAML_SSO, "config_guiOrder": "2",
                                       "config_wantAssertionsSigned": "on", "trust_email": "on",
                                       "post_broker_login_flow_alias": "browser"})
    assert resp.status_code == 200 and not errors_of(resp), errors_of(resp)
    idp = IdentityProvider.objects.get(realm=acme, alias="partner")
    assert (idp.provider_id, idp.display_name, idp.trust_email, idp.post_broker_login_flow_alias) == (
        "saml", "Partner SSO", True, "browser")
    assert idp.first_broker_login_flow_alias == ""  # the realm's
    assert idp.config["singleSignOnServiceUrl"] == SAML_SSO and idp.config["wantAssertionsSigned"] == "true"
    assert idp.config["guiOrder"] == "2" and idp.config["syncMode"] == "IMPORT"  # Keycloak's console default
    assert admin_events(acme, "IDENTITY_PROVIDER") == [("CREATE", "identity-provider/instances/partner")]

    change = reverse("admin:realms_identityprovider_change", args=[idp.pk])
    page = console.get(change).content.decode()
    assert "/realms/acme/broker/partner/endpoint" in page  # the redirect URI
    assert re.search(r'<input[^>]*name="alias"[^>]*disabled', page)
    resp = submit(console, change, FORM, {"enabled": None, "config_syncMode": "FORCE", "alias": "renamed"})
    assert not errors_of(resp), errors_of(resp)
    idp.refresh_from_db()
    assert (idp.alias, idp.enabled, idp.sync_mode) == ("partner", False, "FORCE")
    assert admin_events(acme, "IDENTITY_PROVIDER")[-1] == ("UPDATE", "identity-provider/instances/partner")

    resp = console.post(reverse("admin:realms_identityprovider_delete", args=[idp.pk]), {"post": "yes"}, follow=True)
    assert resp.status_code == 200
    assert not IdentityProvider.objects.filter(realm=acme).exists()
    assert admin_events(acme, "IDENTITY_PROVIDER")[-1] == ("DELETE", "identity-provider/instances/partner")


@pytest.mark.parametrize("changes, message", [
    ({"alias": "has space"}, "Empty Space not allowed."),
    ({"alias": "a/b"}, "Character &#x27;/&#x27; not allowed."),
    ({"alias": "partner"}, "Identity Provider partner already exists"),
    ({"config_singleSignOnServiceUrl": ""}, "This field is required."),
    ({"config_principalType": "ATTRIBUTE"}, "principalAttribute is required when principalType is ATTRIBUTE"),
    ({"config_guiOrder": "-1"}, "Ensure this value is greater than or equal to 0."),
])
def test_invalid_input_is_refused_with_a_message_and_nothing_saved(console, acme, changes, message):  # noqa: F811
    saml_provider(acme)
    in_acme(console, acme)
    data = {"alias": "second", "config_singleSignOnServiceUrl": SAML_SSO, **changes}
    resp = submit(console, f"{ADD}?provider_id=saml", FORM, data)
    assert resp.status_code == 200
    assert message in resp.content.decode()
    assert list(IdentityProvider.objects.filter(realm=acme).values_list("alias", flat=True)) == ["partner"]
    assert admin_events(acme, "IDENTITY_PROVIDER") == []


def test_an_oidc_providers_secret_is_written_never_shown(console, acme):  # noqa: F811
    in_acme(console, acme)
    url = f"{ADD}?provider_id=oidc"
    form = console.get(url).content.decode()
    for label in ("Authorization URL", "Token URL", "Client authentication", "Client Secret", "Use PKCE",
                  "Validate Signatures", "JWKS URL", "Scopes", "Prompt", "Pass login_hint", "Pass max_age",
                  "Backchannel logout", "Discovery endpoint"):
        assert label in form, label
    resp = submit(console, url, FORM, {
        "alias": "corp", "config_authorizationUrl": "https://sso.corp.example/authorize",
        "config_tokenUrl": "https://sso.corp.example/token", "config_clientId": "our-app",
        "config_clientSecret": SECRET, "config_pkceEnabled": "on", "config_pkceMethod": "S256",
        "config_defaultScope": "openid email"})
    assert not errors_of(resp), errors_of(resp)
    idp = IdentityProvider.objects.get(realm=acme, alias="corp")
    assert idp.config["clientSecret"] == SECRET and idp.config["pkceMethod"] == "S256"
    change = reverse("admin:realms_identityprovider_change", args=[idp.pk])
    page = console.get(change).content.decode()
    assert SECRET not in page and "**********" not in page
    assert read_form(page, FORM)["config_clientSecret"] == [""]
    # Saved with the field left empty: the stored secret stays; a new one replaces it.
    assert not errors_of(submit(console, change, FORM, {"config_defaultScope": "openid"}))
    idp.refresh_from_db()
    assert idp.config["clientSecret"] == SECRET and idp.config["defaultScope"] == "openid"
    submit(console, change, FORM, {"config_clientSecret": "rotated"})
    idp.refresh_from_db()
    assert idp.config["clientSecret"] == "rotated"
    assert SECRET not in json.dumps(list(Event.objects.filter(realm=acme).values_list("representation", flat=True)))
    # Its mappers are chosen among the types compatible with OpenID Connect: no SAML attribute mapper.
    offered = select_options(console.get(reverse("admin:realms_identityprovider_mapper_add", args=[idp.pk]))
                             .content.decode(), "type")
    assert "hardcoded-attribute-idp-mapper" in offered and "saml-role-idp-mapper" not in offered


@pytest.fixture
def metadata_server():
    """A loopback server answering its ``payload`` (404 while None)."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            payload = self.server.payload
            self.send_response(200 if payload else 404)
            self.send_header("Content-Type", "application/xml")
            self.end_headers()
            self.wfile.write(payload or b"")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.payload = None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


SAML_METADATA = b"""<?xml version="1.0"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.partner.example/meta">
 <md:IDPSSODescriptor WantAuthnRequestsSigned="true" protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
  <md:NameIDFormat>urn:oasis:names:tc:SAML:2.0:nameid-format:persistent</md:NameIDFormat>
  <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"
    Location="https://idp.partner.example/sso/post"/>
 </md:IDPSSODescriptor>
</md:EntityDescriptor>"""


def test_metadata_imported_from_a_url_fills_the_add_form(console, acme, metadata_server, outbound_loopback):  # noqa: F811
    server = metadata_server
    server.payload = SAML_METADATA
    in_acme(console, acme)
    page = console.get(f"{ADD}?provider_id=saml").content.decode()
    assert 'name="fromUrl" form="console-action"' in page  # the action form's, not the object's
    url = f"http://127.0.0.1:{server.server_port}/metadata"
    resp = console.post(reverse("admin:realms_identityprovider_import") + "?provider_id=saml", {"fromUrl": url},
                        follow=True)
    page = resp.content.decode()
    assert "metadata was imported" in page
    assert read_form(page, FORM)["config_singleSignOnServiceUrl"] == ["https://idp.partner.example/sso/post"]
    assert read_form(page, FORM)["config_idpEntityId"] == ["https://idp.partner.example/meta"]
    assert not IdentityProvider.objects.exists()  # nothing saved until the admin saves
    server.payload = None
    resp = console.post(reverse("admin:realms_identityprovider_import") + "?provider_id=saml", {"fromUrl": url},
                        follow=True)
    assert "Could not fetch the metadata" in resp.content.decode()


def test_enable_and_disable_from_the_list(console, acme):  # noqa: F811
    idp = saml_provider(acme)
    in_acme(console, acme)
    resp = console.post(LIST, {"action": "disable_providers", "_selected_action": [idp.pk]}, follow=True)
    assert "Disabled 1 identity provider(s)." in resp.content.decode()
    idp.refresh_from_db()
    assert not idp.enabled
    console.post(LIST, {"action": "enable_providers", "_selected_action": [idp.pk]}, follow=True)
    idp.refresh_from_db()
    assert idp.enabled
    assert [t for t, _ in admin_events(acme, "IDENTITY_PROVIDER")] == ["UPDATE", "UPDATE"]


def test_mappers_add_edit_and_delete(console, acme):  # noqa: F811
    idp = saml_provider(acme)
    Role.objects.create(realm=acme, name="partner-staff")
    in_acme(console, acme)
    change = reverse("admin:realms_identityprovider_change", args=[idp.pk])
    assert "No mappers." in console.get(change).content.decode()
    add = reverse("admin:realms_identityprovider_mapper_add", args=[idp.pk])
    page = console.get(add).content.decode()
    offered = select_options(page, "type")
    assert "oidc-hardcoded-role-idp-mapper" in offered and "saml-role-idp-mapper" in offered
    page = console.get(add, {"type": "oidc-hardcoded-role-idp-mapper"}).content.decode()
    assert "Hardcoded Role" in page and "Sync mode override" in page or "syncMode" in page
    fields = read_form(page, "identityprovidermapper_form")
    names = {n for n in fields if n.startswith("property_")}
    resp = console.post(add + "?type=oidc-hardcoded-role-idp-mapper", {
        **{n: v for n, v in fields.items()}, "name": "staff", **{n: "partner-staff" for n in names
                                                                 if n == "property_0"}}, follow=True)
    assert "Mapper staff saved." in resp.content.decode(), errors_of(resp)
    mapper = IdentityProviderMapper.objects.get(identity_provider=idp)
    assert (mapper.name, mapper.mapper_type, mapper.config["role"]) == ("staff", "oidc-hardcoded-role-idp-mapper",
                                                                       "partner-staff")
    assert admin_events(acme, "IDENTITY_PROVIDER_MAPPER") == [
        ("CREATE", f"identity-provider/instances/partner/mappers/{mapper.pk}")]
    assert "staff" in console.get(change).content.decode()

    # A second mapper with the same name is refused, with Keycloak's message; nothing saved.
    resp = console.post(add + "?type=oidc-hardcoded-role-idp-mapper", {**fields, "name": "staff"})
    assert "Failed to add mapper &#x27;staff&#x27;" in resp.content.decode()
    assert IdentityProviderMapper.objects.count() == 1

    edit = reverse("admin:realms_identityprovider_mapper", args=[idp.pk, mapper.pk])
    data = read_form(console.get(edit).content.decode(), "identityprovidermapper_form")
    sync = next(n for n in data if n.startswith("property_") and data[n] == ["INHERIT"])
    resp = console.post(edit, {**data, sync: "FORCE"}, follow=True)
    assert "Mapper staff saved." in resp.content.decode()
    mapper.refresh_from_db()
    assert mapper.config["syncMode"] == "FORCE"

    assert console.get(reverse("admin:realms_identityprovider_mapper_delete", args=[idp.pk, mapper.pk])).status_code \
        == 405
    console.post(reverse("admin:realms_identityprovider_mapper_delete", args=[idp.pk, mapper.pk]))
    assert not IdentityProviderMapper.objects.exists()
    assert [t for t, _ in admin_events(acme, "IDENTITY_PROVIDER_MAPPER")] == ["CREATE", "UPDATE", "DELETE"]


def test_a_users_identity_provider_links_listed_and_unlinked(console, acme, alice):  # noqa: F811
    idp = saml_provider(acme)
    link = FederatedIdentity.objects.create(realm=acme, user=alice, identity_provider=idp, subject="p-123",
                                            user_name="alice@partner")
    change = reverse("admin:realms_user_change", args=[alice.pk])
    page = console.get(change).content.decode()
    assert "Identity provider links" in page and "p-123" in page and "alice@partner" in page
    data = read_form(page, "user_form")
    prefix = next(n for n in data if n.endswith("-TOTAL_FORMS") and "federated" in n).removesuffix("-TOTAL_FORMS")
    resp = console.post(change, {**data, f"{prefix}-0-DELETE": "on"}, follow=True)
    assert resp.status_code == 200 and not errors_of(resp), errors_of(resp)
    assert not FederatedIdentity.objects.filter(pk=link.pk).exists()
    assert ("DELETE", f"users/{alice.pk}/federated-identity/partner") in admin_events(acme, "USER")


DISCOVERY = (Path(__file__).resolve().parents[1] / "data" / "keycloak-brokering"
             / "keycloak-testsuite-oidc-idp-discovery.json").read_bytes()  # Keycloak's own test's document


def test_an_oidc_discovery_document_fills_the_endpoints(console, acme, metadata_server, outbound_loopback):  # noqa: F811
    metadata_server.payload = DISCOVERY
    in_acme(console, acme)
    page = console.get(f"{ADD}?provider_id=oidc").content.decode()
    assert "Discovery endpoint" in page
    url = f"http://127.0.0.1:{metadata_server.server_port}/.well-known/openid-configuration"
    resp = console.post(reverse("admin:realms_identityprovider_import") + "?provider_id=oidc", {"fromUrl": url},
                        follow=True)
    values = read_form(resp.content.decode(), FORM)
    assert values["config_authorizationUrl"] == ["https://aai.egi.eu/oidc/authorize"]
    assert values["config_tokenUrl"] == ["https://aai.egi.eu/oidc/token"]
    assert values["config_issuer"] == ["https://aai.egi.eu/oidc/"]
    assert values["config_jwksUrl"] == ["https://aai.egi.eu/oidc/jwk"]
    # A type without metadata (OAuth v2) offers no import.
    assert "Discovery endpoint" not in console.get(f"{ADD}?provider_id=oauth2").content.decode()


def test_a_map_property_is_rows_stored_as_keycloaks_json_list(console, acme):  # noqa: F811
    idp = saml_provider(acme)
    Role.objects.create(realm=acme, name="partner-admin")
    in_acme(console, acme)
    add = reverse("admin:realms_identityprovider_mapper_add", args=[idp.pk]) + "?type=saml-advanced-role-idp-mapper"
    fields = read_form(console.get(add).content.decode(), "identityprovidermapper_form")
    rows = next(n.removesuffix("-key") for n in fields if n.endswith("-key"))
    role = next(n for n in fields if n.startswith("property_") and n not in (f"{rows}-key", f"{rows}-value",
                                                                             f"{rows}-present")
                and fields[n] == [""])
    resp = console.post(add, {**fields, "name": "admins", f"{rows}-key": ["group", "level"],
                              f"{rows}-value": ["admins", "3"], role: "partner-admin"}, follow=True)
    assert "Mapper admins saved." in resp.content.decode(), errors_of(resp)
    mapper = IdentityProviderMapper.objects.get(identity_provider=idp)
    assert json.loads(mapper.config["attributes"]) == [{"key": "group", "value": "admins"},
                                                       {"key": "level", "value": "3"}]
    page = console.get(reverse("admin:realms_identityprovider_mapper", args=[idp.pk, mapper.pk])).content.decode()
    assert read_form(page, "identityprovidermapper_form")[f"{rows}-key"][:2] == ["group", "level"]


def test_an_admin_who_may_only_view_providers_cannot_change_them(client, master, acme):  # noqa: F811
    idp = saml_provider(acme)
    viewer = create_user(master, "viewer")
    viewer.roles.add(Role.objects.get(realm=master, client__client_id="acme-realm", name="view-identity-providers"))
    client.force_login(viewer)
    change = reverse("admin:realms_identityprovider_change", args=[idp.pk])
    page = client.get(change)
    assert page.status_code == 200 and b'name="_save"' not in page.content
    assert SAML_SSO in page.content.decode()  # the settings shown, read-only
    assert client.post(change, {"alias": "partner", "display_name": "Changed"}).status_code == 403
    assert client.get(ADD).status_code == 403
    delete = reverse("admin:realms_identityprovider_mapper_delete", args=[idp.pk, "x"])
    assert client.post(delete).status_code in (403, 404)
    mapper_add = reverse("admin:realms_identityprovider_mapper_add", args=[idp.pk])
    assert client.post(mapper_add, {"name": "m"}).status_code == 403
    idp.refresh_from_db()
    assert idp.display_name == "Partner" and not IdentityProviderMapper.objects.exists()


def test_a_social_preset_shows_client_id_secret_and_its_own_settings(console, acme):  # noqa: F811
    in_acme(console, acme)
    url = f"{ADD}?provider_id=google"
    page = console.get(url).content.decode()
    for label in ("Client ID", "Client Secret", "Hosted domain", "Request refresh token", "Scopes"):
        assert label in page, label
    assert "Authorization URL" not in page  # the preset's endpoints are its own
    resp = submit(console, url, FORM, {"alias": "google", "config_clientId": "our-app.apps.example",
                                       "config_clientSecret": SECRET, "config_hostedDomain": "acme.example",
                                       "config_offlineAccess": "on"})
    assert not errors_of(resp), errors_of(resp)
    idp = IdentityProvider.objects.get(realm=acme, alias="google")
    assert (idp.provider_id, idp.config["hostedDomain"], idp.config["offlineAccess"]) == (
        "google", "acme.example", "true")
    assert SECRET not in console.get(reverse("admin:realms_identityprovider_change", args=[idp.pk])).content.decode()


def test_link_a_user_to_an_account_at_a_provider(console, acme, alice):  # noqa: F811
    idp = saml_provider(acme)
    bob = create_user(acme, "bob")
    FederatedIdentity.objects.create(realm=acme, user=bob, identity_provider=idp, subject="p-bob", user_name="bob")
    change = reverse("admin:realms_user_change", args=[alice.pk])
    page = console.get(change).content.decode()
    link = reverse("admin:realms_user_link_idp", args=[alice.pk, "partner"])
    assert "Available identity providers" in page and f'href="{link}"' in page
    # The account is bob's already: refused with the reason, nothing linked.
    resp = console.post(link, {"user_id": "p-bob", "user_name": "alice"})
    assert "The account p-bob of identity provider partner is linked to another user" in resp.content.decode()
    assert not FederatedIdentity.objects.filter(user=alice).exists()
    assert "This field is required." in console.post(link, {"user_id": "", "user_name": ""}).content.decode()
    resp = console.post(link, {"user_id": "p-alice", "user_name": "alice@partner"}, follow=True)
    assert "Alice is linked to Partner." in resp.content.decode()  # Django capitalizes a message
    assert FederatedIdentity.objects.filter(user=alice, identity_provider=idp, subject="p-alice").exists()
    assert ("CREATE", f"users/{alice.pk}/federated-identity/partner") in admin_events(acme, "USER")
    assert console.get(reverse("admin:realms_user_link_idp", args=[alice.pk, "nope"])).status_code == 404
