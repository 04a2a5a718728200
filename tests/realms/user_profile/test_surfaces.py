"""The profile applied where a user is written: the registration and update-profile pages, the
Admin API (create, update, metadata), the Account API; a custom attribute refused and accepted."""
import re

import pytest
from django.test import Client as HttpClient

from realms.models import Client as ClientModel
from realms.models import User
from realms.users.profile import config as upconfig
from tests.oidc.browser.conftest import PASSWORD
from tests.realms.test_account_api import call
from tests.selfservice.test_required_actions import must, sign_in
from tests.selfservice.test_reset_and_registration import AUTH, PARAMS, form_action, html, link, redirect_query

from .conftest import DEPARTMENT, profile_with

pytestmark = pytest.mark.django_db
FORM = {"username": "alice", "email": "alice@example.com", "firstName": "Alice", "lastName": "Liddell",
        "password": PASSWORD, "password-confirm": PASSWORD}


def test_registration_renders_and_checks_the_custom_attribute(profiled, web_app):
    profiled.registration_allowed = True
    profiled.save()
    http = HttpClient()
    page = http.get(link(http.get(AUTH, PARAMS), "kc-register"))
    text = html(page)
    assert re.search(r'<legend>Work</legend>\s*<p class="hint">Where you work</p>', text)
    assert re.search(r'<label for="department">Department \*</label>', text)
    assert 'id="department-help-before">Your team<' in text
    resp = http.post(form_action(page), {**FORM, "department": ""})
    assert resp.status_code == 400
    assert re.search(r'id="input-error-department"[^>]*>Please specify this field.<', html(resp))
    resp = http.post(form_action(page), {**FORM, "department": "x"})
    assert re.search(r'id="input-error-department"[^>]*>Length must be between 2 and 20.<', html(resp))
    resp = http.post(form_action(page), {**FORM, "department": "sales"})
    assert re.search(r'id="input-error-department"[^>]*>Invalid value.<', html(resp))
    assert 'value="sales"' in html(resp)  # what the person typed stays in the field
    done = http.post(form_action(page), {**FORM, "department": "Sales"})
    assert redirect_query(done)["code"]
    assert User.objects.get(realm=profiled, username="alice").attributes == {"department": ["Sales"]}


def test_update_profile_asks_for_the_custom_attribute(profiled, web_app, bob):
    must(bob, "UPDATE_PROFILE")
    http = HttpClient()
    page = sign_in(http)
    assert 'id="department"' in html(page)
    form = {"email": "bob@example.com", "firstName": "Bob", "lastName": "B", "username": "bob"}
    resp = http.post(form_action(page), {**form, "department": "1"})
    assert re.search(r'id="input-error-department"[^>]*>Length must be between 2 and 20.<', html(resp))
    done = http.post(form_action(page), {**form, "department": "Ops"})
    assert redirect_query(done)["code"]
    bob.refresh_from_db()
    assert bob.attributes["department"] == ["Ops"]


def test_names_are_optional_where_the_profile_does_not_require_them(acme, web_app, bob):
    config = profile_with()
    for attr in config["attributes"]:
        attr.pop("required", None)
    upconfig.store(acme, config)
    must(bob, "UPDATE_PROFILE")
    http = HttpClient()
    page = sign_in(http)
    done = http.post(form_action(page), {"username": "bob", "email": "bob@example.com", "firstName": "",
                                         "lastName": ""})
    assert redirect_query(done)["code"]
    bob.refresh_from_db()
    assert (bob.first_name, bob.last_name) == ("", "")


def test_admin_api_refuses_then_accepts(profiled, admin):
    # required of users only: an administrator may create the user without it
    assert admin("post", "acme/users", {"username": "carol"}).status_code == 201
    resp = admin("post", "acme/users", {"username": "dave", "attributes": {"department": ["x"]}})
    assert resp.status_code == 400
    assert resp.json() == {"field": "department", "errorMessage": "error-invalid-length",
                           "params": ["Department", "2", "20"]}
    resp = admin("post", "acme/users", {"username": "dave", "email": "nope",
                                        "attributes": {"department": ["sales"]}})
    assert resp.json()["errors"] == [
        {"field": "email", "errorMessage": "error-invalid-email", "params": ["${email}"]},
        {"field": "department", "errorMessage": "error-pattern-no-match", "params": ["Department", "^[A-Z][a-z]+$"]}]
    assert admin("post", "acme/users", {"username": "dave", "attributes": {"department": "Sales"}}).status_code == 201
    dave = User.objects.get(realm=profiled, username="dave")
    assert dave.attributes == {"department": ["Sales"]}
    resp = admin("put", f"acme/users/{dave.pk}", {"attributes": {"department": ["Sales", "Ops"]}})
    assert resp.json()["errorMessage"] == "error-invalid-value"  # not multivalued
    assert admin("put", f"acme/users/{dave.pk}", {"attributes": {"department": ["Ops"]}}).status_code == 204
    dave.refresh_from_db()
    assert dave.attributes == {"department": ["Ops"]}
    rep = admin("get", f"acme/users/{dave.pk}", userProfileMetadata="true").json()
    assert rep["attributes"] == {"department": ["Ops"]}
    assert [a["name"] for a in rep["userProfileMetadata"]["attributes"]] == [
        "username", "email", "firstName", "lastName", "department"]


def test_unmanaged_attributes_follow_the_policy(acme, admin):
    upconfig.store(acme, profile_with(DEPARTMENT))  # no policy: DISABLED
    assert admin("post", "acme/users", {"username": "erin", "attributes": {"shoe": ["42"]}}).status_code == 201
    erin = User.objects.get(realm=acme, username="erin")
    assert erin.attributes == {}  # not kept: the profile does not know it
    upconfig.store(acme, profile_with(DEPARTMENT, unmanagedAttributePolicy="ADMIN_EDIT"))
    assert admin("put", f"acme/users/{erin.pk}", {"attributes": {"shoe": ["42"]}}).status_code == 204
    erin.refresh_from_db()
    assert erin.attributes == {"shoe": ["42"]}
    upconfig.store(acme, profile_with(DEPARTMENT, unmanagedAttributePolicy="ADMIN_VIEW"))
    assert admin("get", f"acme/users/{erin.pk}").json()["attributes"] == {"shoe": ["42"]}
    assert admin("put", f"acme/users/{erin.pk}", {"attributes": {"shoe": ["43"]}}).status_code == 204
    erin.refresh_from_db()
    assert erin.attributes == {"shoe": ["42"]}  # an administrator may only look at it
    upconfig.store(acme, profile_with(DEPARTMENT))
    assert "shoe" not in admin("get", f"acme/users/{erin.pk}").json().get("attributes", {})
    listed = admin("get", "acme/users", username="erin", exact="true").json()
    assert [u["username"] for u in listed] == ["erin"] and "shoe" not in listed[0].get("attributes", {})


def test_admin_only_attribute_is_hidden_from_the_user_and_read_only_there(acme, bob):
    ClientModel.objects.filter(realm=acme, client_id="account-console").update(direct_access_grants_enabled=True)
    badge = {"name": "badge", "displayName": "Badge", "permissions": {"view": ["admin", "user"], "edit": ["admin"]},
             "validations": {"integer": {"min": 1, "max": 999}}}
    secret = {"name": "clearance", "permissions": {"view": ["admin"], "edit": ["admin"]}}
    upconfig.store(acme, profile_with(DEPARTMENT, badge, secret))
    bob.attributes = {"badge": ["7"], "clearance": ["top"], "department": ["Ops"]}
    bob.first_name, bob.last_name = "Bob", "B"
    bob.save()
    access = HttpClient().post("/realms/acme/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": "account-console", "username": "bob",
        "password": PASSWORD}).json()["access_token"]
    rep = call(access, "get", "?userProfileMetadata=true").json()
    assert rep["attributes"] == {"badge": ["7"], "department": ["Ops"]}
    meta = {a["name"]: a for a in rep["userProfileMetadata"]["attributes"]}
    assert "clearance" not in meta and meta["badge"]["readOnly"] is True and meta["department"]["required"] is True
    body = {"username": "bob", "email": "bob@example.com", "firstName": "Bob", "lastName": "B"}
    resp = call(access, "post", "", {**body, "attributes": {"department": ["x"]}})
    assert resp.status_code == 400
    assert resp.json()["errors"] == [{"field": "department", "errorMessage": "error-invalid-length",
                                      "params": ["Department", "2", "20"]}]
    resp = call(access, "post", "", {**body, "attributes": {"department": ["Ops"], "badge": ["8"]}})
    assert resp.json()["errors"][0]["errorMessage"] == "error-user-attribute-read-only"
    assert call(access, "post", "", {**body, "attributes": {"department": ["Sales"]}}).status_code == 204
    bob.refresh_from_db()
    assert bob.attributes == {"badge": ["7"], "clearance": ["top"], "department": ["Sales"]}


def test_a_user_missing_a_required_attribute_is_sent_through_verify_profile(profiled, web_app, bob):
    http = HttpClient()
    page = sign_in(http)  # bob has no department (nor names): the profile asks for them
    assert 'id="kc-update-profile-form"' in html(page)
    assert re.search(r'id="input-error-department"[^>]*>Please specify this field.<', html(page))
    bob.refresh_from_db()
    assert bob.required_actions == ["VERIFY_PROFILE"]
    form = {"username": "bob", "email": "bob@example.com", "firstName": "Bob", "lastName": "B"}
    resp = http.post(form_action(page), {**form, "department": "ops"})
    assert re.search(r'id="input-error-department"[^>]*>Invalid value.<', html(resp))
    done = http.post(form_action(page), {**form, "department": "Ops"})
    assert redirect_query(done)["code"]
    bob.refresh_from_db()
    assert bob.required_actions == [] and bob.attributes == {"department": ["Ops"]}
    assert redirect_query(sign_in(HttpClient()))["code"]  # complete now: not asked again


def test_verify_profile_asked_of_a_complete_user_is_done_at_once(profiled, web_app, bob):
    bob.first_name, bob.last_name, bob.attributes = "Bob", "B", {"department": ["Ops"]}
    bob.save()
    must(bob, "VERIFY_PROFILE")
    assert redirect_query(sign_in(HttpClient()))["code"]
    bob.refresh_from_db()
    assert bob.required_actions == []


def test_the_account_console_shows_and_checks_the_profiles_attributes(profiled, web_app, bob):
    bob.first_name, bob.last_name, bob.attributes = "Bob", "B", {"department": ["Ops"]}
    bob.save()
    http = HttpClient()
    redirect_query(sign_in(http))
    text = html(http.get("/realms/acme/account/"))
    assert re.search(r'<legend>Work</legend>', text) and 'value="Ops"' in text
    form = {"username": "bob", "email": "bob@example.com", "firstName": "Bob", "lastName": "B"}
    resp = http.post("/realms/acme/account/", {**form, "department": "o"})
    assert resp.status_code == 400
    assert re.search(r'id="input-error-department"[^>]*>Length must be between 2 and 20.<', html(resp))
    assert 'value="o"' in html(resp)
    http.post("/realms/acme/account/", {**form, "department": "Research"})
    bob.refresh_from_db()
    assert bob.attributes == {"department": ["Research"]}
