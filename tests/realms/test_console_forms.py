"""The console's form controls a Keycloak admin expects: attributes as rows of key and value
(a key on several rows is a multi-valued attribute), flow bindings as dropdowns of the realm's
top-level flows, and the password policy built from a dropdown of policies with their values,
stored as Keycloak's policy string. Bad input is a message on the form and changes nothing."""
import pytest
from django.urls import reverse

from realms.administration.flow_admin import copy_flow
from realms.credentials import password_policy
from realms.models import AuthenticationFlow, Client, Group, IdentityProvider, Realm
from realms.representation.services import create_realm
from realms.users import storage
from realms.users.accounts import create_user

from .test_admin import errors_of, make_admin, read_form, select_options, submit

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]


@pytest.fixture
def console(client):
    client.force_login(make_admin(Realm.objects.get_or_create(name="master")[0]))
    return client


@pytest.fixture
def acme():
    return create_realm("acme")


def change_url(obj):
    return reverse(f"admin:realms_{type(obj)._meta.model_name}_change", args=[obj.pk])


def form_errors(response):
    return response.context["adminform"].form.errors


# --- Attributes --------------------------------------------------------------------------------

def test_user_attributes_are_rows_and_a_repeated_key_is_several_values(console, acme):
    alice = create_user(acme, "alice", attributes={"team": ["blue"], "phone": ["1", "2"]})
    page = console.get(change_url(alice)).content.decode()
    assert 'name="attributes"' not in page  # no JSON text area
    form = read_form(page, "user_form")
    # Each value a row, then one empty row to fill.
    assert list(zip(form["attributes-key"], form["attributes-value"], strict=True)) == [
        ("team", "blue"), ("phone", "1"), ("phone", "2"), ("", "")]
    assert page.count('type="button" class="button console-attribute-') == 5  # 4 Remove, 1 Add: none submits
    response = submit(console, change_url(alice), "user_form", {
        "attributes-key": ["team", "phone", "phone", " room ", ""], "attributes-value": ["red", "1", "3", "4.12", ""]})
    assert not errors_of(response), errors_of(response)
    alice.refresh_from_db()
    assert alice.attributes == {"team": ["red"], "phone": ["1", "3"], "room": ["4.12"]}
    # Every row removed: no attributes.
    submit(console, change_url(alice), "user_form", {"attributes-key": [""], "attributes-value": [""]})
    alice.refresh_from_db()
    assert alice.attributes == {}


@pytest.mark.parametrize("keys, values, message", [
    (["", "team"], ["orphan", "blue"], "Row 1: give the attribute a key"),
    (["k" * 256], ["v"], "Row 1: a key has at most 255 characters"),
])
def test_bad_attribute_rows_are_refused_and_change_nothing(console, acme, keys, values, message):
    alice = create_user(acme, "alice", attributes={"team": ["blue"]})
    response = submit(console, change_url(alice), "user_form",
                      {"attributes-key": keys, "attributes-value": values, "first_name": "Changed"})
    assert message in " ".join(form_errors(response)["attributes"])
    alice.refresh_from_db()
    assert alice.attributes == {"team": ["blue"]} and alice.first_name != "Changed"


def test_group_attributes_are_rows(console, acme):
    group = Group.objects.create(realm=acme, name="staff", attributes={"floor": ["3"]})
    response = submit(console, change_url(group), "group_form",
                      {"attributes-key": ["floor", "floor"], "attributes-value": ["3", "4"]})
    assert not errors_of(response), errors_of(response)
    group.refresh_from_db()
    assert group.attributes == {"floor": ["3", "4"]}


def test_client_attributes_take_one_value_a_key(console, acme):
    app = Client.objects.create(realm=acme, client_id="web-app", redirect_uris=["https://app.example/cb"],
                                attributes={"pkce.code.challenge.method": "S256"})
    form = read_form(console.get(change_url(app)).content.decode(), "client_form")
    assert ("pkce.code.challenge.method", "S256") in zip(form["attributes-key"], form["attributes-value"], strict=True)
    response = submit(console, change_url(app), "client_form",
                      {"attributes-key": ["a", "a"], "attributes-value": ["1", "2"]})
    assert "the key a is given twice" in " ".join(form_errors(response)["attributes"])
    app.refresh_from_db()
    assert app.attributes == {"pkce.code.challenge.method": "S256"}
    response = submit(console, change_url(app), "client_form", {
        "attributes-key": ["pkce.code.challenge.method", "post.logout.redirect.uris"],
        "attributes-value": ["plain", "https://app.example/bye"]})
    assert not errors_of(response), errors_of(response)
    app.refresh_from_db()
    assert app.attributes == {"pkce.code.challenge.method": "plain", "post.logout.redirect.uris": "https://app.example/bye"}


# --- Flow bindings -----------------------------------------------------------------------------

def test_flow_bindings_are_dropdowns_of_the_realms_top_level_flows(console, acme):
    copy_flow(acme, AuthenticationFlow.objects.get(realm=acme, alias="browser"), "my browser")
    page = console.get(change_url(acme)).content.decode()
    offered = select_options(page, "browser_flow")
    assert "my browser" in offered and "browser" in offered and "direct grant" in offered
    # Sub-flows and the client flow are not bindings of these.
    assert "clients" not in offered and not any("forms" in alias for alias in offered)
    assert select_options(page, "client_authentication_flow") == ["clients"]
    response = submit(console, change_url(acme), "realm_form", {"browser_flow": "my browser"})
    assert not errors_of(response), errors_of(response)
    acme.refresh_from_db()
    assert acme.browser_flow == "my browser"


@pytest.mark.parametrize("field, value", [("browser_flow", "no such flow"), ("direct_grant_flow", "clients"),
                                          ("client_authentication_flow", "browser")])
def test_a_binding_to_a_flow_not_offered_is_refused(console, acme, field, value):
    response = submit(console, change_url(acme), "realm_form", {field: value})
    assert field in form_errors(response)
    acme.refresh_from_db()
    assert getattr(acme, field) == Realm._meta.get_field(field).default


def test_a_binding_whose_flow_is_gone_is_marked_and_kept_until_changed(console, acme):
    Realm.objects.filter(pk=acme.pk).update(reset_credentials_flow="deleted flow")
    page = console.get(change_url(acme)).content.decode()
    assert "deleted flow (no such flow)" in page
    # Other settings still save; the binding stays as it was until a flow is chosen.
    response = submit(console, change_url(acme), "realm_form", {"display_name": "ACME"})
    assert not errors_of(response), errors_of(response)
    acme.refresh_from_db()
    assert acme.display_name == "ACME" and acme.reset_credentials_flow == "deleted flow"
    response = submit(console, change_url(acme), "realm_form", {"reset_credentials_flow": "reset credentials"})
    assert not errors_of(response), errors_of(response)
    acme.refresh_from_db()
    assert acme.reset_credentials_flow == "reset credentials"


def test_a_new_realms_bindings_are_the_built_in_flows(console):
    page = console.get(reverse("admin:realms_realm_add")).content.decode()
    assert read_form(page, "realm_form")["browser_flow"] == ["browser"]
    response = submit(console, reverse("admin:realms_realm_add"), "realm_form",
                      {"name": "shop", "direct_grant_flow": "browser"})
    assert not errors_of(response), errors_of(response)
    assert Realm.objects.get(name="shop").direct_grant_flow == "browser"


# --- Password policy ---------------------------------------------------------------------------

def test_every_policy_the_server_enforces_is_offered():
    from realms.admin.realm_settings import POLICY_LABELS

    assert set(POLICY_LABELS) == set(password_policy.KINDS)


def test_password_policy_is_built_from_rows_and_takes_effect(console, acme):
    response = submit(console, change_url(acme), "realm_form", {
        "password_policy-policy": ["length", "notUsername", "digits", ""],
        "password_policy-value": ["12", "", " 2 ", ""]})
    assert not errors_of(response), errors_of(response)
    acme.refresh_from_db()
    assert acme.password_policy == "length(12) and notUsername(undefined) and digits(2)"
    form = read_form(console.get(change_url(acme)).content.decode(), "realm_form")
    assert list(zip(form["password_policy-policy"], form["password_policy-value"], strict=True)) == [
        ("length", "12"), ("notUsername", ""), ("digits", "2"), ("", "")]
    with pytest.raises(password_policy.PasswordPolicyError, match="minimum length 12"):
        storage.set_password(acme, create_user(acme, "bob"), "short12")


@pytest.mark.parametrize("policies, values, message", [
    (["length", "length"], ["8", "9"], "Minimum length is added twice"),
    (["length"], ["many"], "Invalid config for length: Not a valid number"),
    (["regexPattern"], [""], "Invalid config for regexPattern"),
    (["", "digits"], ["3", "1"], "Row 1: choose the policy"),
    (["nonsense"], ["1"], "not a password policy this server knows"),
    (["regexPattern"], ["a and b"], "cannot contain"),
])
def test_bad_password_policy_rows_are_refused(console, acme, policies, values, message):
    acme.password_policy = "length(10)"
    acme.save()
    response = submit(console, change_url(acme), "realm_form",
                      {"password_policy-policy": policies, "password_policy-value": values})
    assert message in " ".join(form_errors(response)["password_policy"]), form_errors(response)
    acme.refresh_from_db()
    assert acme.password_policy == "length(10)"


# --- SCIM ---------------------------------------------------------------------------------------

def test_the_scim_help_names_the_realms_own_base_path(console, acme):
    page = console.get(change_url(acme)).content.decode()
    assert "SCIM 2.0 provisioning below /realms/acme/scim/v2." in page and "/realms//scim" not in page
    page = console.get(reverse("admin:realms_realm_add")).content.decode()
    assert "below /realms/&lt;realm name&gt;/scim/v2." in page


# --- A new client: the protocol first ------------------------------------------------------------

def test_a_new_clients_form_shows_only_its_protocols_sections(console, acme):
    add = reverse("admin:realms_client_add")
    console.get(reverse("admin:realms_client_changelist") + f"?realm__id__exact={acme.pk}")
    page = console.get(add).content.decode()
    assert 'name="public_client"' in page and 'name="saml_encrypt"' not in page and "SAML" in page  # a link to it
    assert '<a href="?protocol=saml">SAML</a>' in page
    # The protocol is fixed on the form: posting another one changes nothing.
    response = submit(console, add, "client_form", {"client_id": "web", "protocol": "saml"})
    assert not errors_of(response), errors_of(response)
    assert Client.objects.get(realm=acme, client_id="web").protocol == "openid-connect"

    page = console.get(add + "?protocol=saml").content.decode()
    assert 'name="saml_encrypt"' in page
    for oidc_only in ("public_client", "client_authenticator_type", "standard_flow_enabled", "web_origins"):
        assert f'name="{oidc_only}"' not in page, oidc_only
    response = submit(console, add + "?protocol=saml", "client_form",
                      {"client_id": "https://sp.example/saml", "saml_client_signature": None})
    assert not errors_of(response), errors_of(response)
    assert Client.objects.get(realm=acme, client_id="https://sp.example/saml").protocol == "saml"
    # A protocol the server does not have is OpenID Connect's form.
    assert 'name="public_client"' in console.get(add + "?protocol=cas").content.decode()


# --- Capability switches and the CIBA policy kept as attributes ----------------------------------

def test_grant_switches_are_checkboxes_kept_as_keycloaks_client_attributes(console, acme):
    app = Client.objects.create(realm=acme, client_id="tv", redirect_uris=["https://app.example/cb"],
                                attributes={"pkce.code.challenge.method": "S256", "oidc.ciba.grant.enabled": "true"})
    form = read_form(console.get(change_url(app)).content.decode(), "client_form")
    assert form.get("ciba_grant") == ["on"] and "device_authorization_grant" not in form
    response = submit(console, change_url(app), "client_form", {
        "device_authorization_grant": "on", "standard_token_exchange": "on", "ciba_grant": None})
    assert not errors_of(response), errors_of(response)
    app.refresh_from_db()
    assert app.attributes == {"pkce.code.challenge.method": "S256", "oidc.ciba.grant.enabled": "false",
                              "oauth2.device.authorization.grant.enabled": "true",
                              "standard.token.exchange.enabled": "true"}
    # The JWT authorization grant: its switch and the identity providers it trusts ("##"-joined).
    for alias in ("corp", "partner"):
        IdentityProvider.objects.create(realm=acme, alias=alias, provider_id="oidc")
    response = submit(console, change_url(app), "client_form", {
        "jwt_authorization_grant": "on", "jwt_authorization_grant_idps": ["corp", "partner"]})
    assert not errors_of(response), errors_of(response)
    app.refresh_from_db()
    assert app.attributes["oauth2.jwt.authorization.grant.enabled"] == "true"
    assert app.attributes["oauth2.jwt.authorization.grant.idp"] == "corp##partner"
    response = submit(console, change_url(app), "client_form", {"jwt_authorization_grant_idps": ["ghost"]})
    assert "jwt_authorization_grant_idps" in form_errors(response)  # not a provider of the realm
    response = submit(console, change_url(app), "client_form", {"jwt_authorization_grant_idps": []})
    app.refresh_from_db()
    assert "oauth2.jwt.authorization.grant.idp" not in app.attributes
    # A SAML client has none of them.
    page = console.get(reverse("admin:realms_client_add") + "?protocol=saml").content.decode()
    assert 'name="device_authorization_grant"' not in page and 'name="ciba_grant"' not in page


def test_the_ciba_policy_is_kept_as_keycloaks_realm_attributes(console, acme):
    page = console.get(change_url(acme)).content.decode()
    assert "CIBA Policy" in page and "Backchannel Token Delivery Mode" in page
    response = submit(console, change_url(acme), "realm_form", {
        "ciba_delivery_mode": "ping", "ciba_expires_in": "300", "ciba_interval": "10"})
    assert not errors_of(response), errors_of(response)
    acme.refresh_from_db()
    assert {k: acme.attributes[k] for k in ("cibaBackchannelTokenDeliveryMode", "cibaExpiresIn", "cibaInterval",
                                            "cibaAuthRequestedUserHint")} == {
        "cibaBackchannelTokenDeliveryMode": "ping", "cibaExpiresIn": "300", "cibaInterval": "10",
        "cibaAuthRequestedUserHint": "login_hint"}
    response = submit(console, change_url(acme), "realm_form", {"ciba_expires_in": "5"})
    assert "ciba_expires_in" in form_errors(response)
    acme.refresh_from_db()
    assert acme.attributes["cibaExpiresIn"] == "300"


def test_a_resource_servers_url_is_kept_as_keycloaks_resource_url_attribute(console, acme):
    api = Client.objects.create(realm=acme, client_id="api", bearer_only=True)
    response = submit(console, change_url(api), "client_form", {"resource_url": "https://api.example/mcp"})
    assert not errors_of(response), errors_of(response)
    api.refresh_from_db()
    assert api.attributes["resource_url"] == "https://api.example/mcp"
    response = submit(console, change_url(api), "client_form", {"resource_url": "not a url"})
    assert "resource_url" in form_errors(response)


def test_the_client_id_metadata_document_policy_is_shown_only_while_its_feature_is_on(console, acme, settings):
    settings.IDP_FEATURES = ""
    assert "cimd_permitted_domains" not in console.get(change_url(acme)).content.decode()
    settings.IDP_FEATURES = "client-id-metadata-document"
    assert 'name="cimd_permitted_domains"' in console.get(change_url(acme)).content.decode()
    response = submit(console, change_url(acme), "realm_form", {
        "cimd_permitted_domains": "agents.example\n*.tools.example", "cimd_consent_required": None})
    assert not errors_of(response), errors_of(response)
    acme.refresh_from_db()
    assert acme.attributes["cimd-allow-permitted-domains"] == "agents.example\n*.tools.example"
    assert acme.attributes["cimd-consent-required"] == "false"
