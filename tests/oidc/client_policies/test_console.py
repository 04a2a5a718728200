"""The console's Client policies tab: JSON editors for the realm's profiles and policies, checked
as the Admin API checks them; an invalid POST shows the error and changes nothing, and the two
attributes that hold the documents are never edited as plain attributes."""
import json

import pytest

from realms.representation import client_policies as cp
from tests.realms.test_admin import acme, console, errors_of, master, submit  # noqa: F401 (fixtures)

from .test_import import OWN_POLICY, OWN_PROFILES

pytestmark = pytest.mark.django_db


def url(realm):
    return f"/admin/master/console/realms/realm/{realm.pk}/change/"


def test_documents_saved_and_shown(console, acme):  # noqa: F811
    response = submit(console, url(acme), "realm_form", {"client_profiles": json.dumps(OWN_PROFILES),
                                                         "client_policies": json.dumps(OWN_POLICY)})
    assert not errors_of(response), errors_of(response)
    acme.refresh_from_db()
    assert cp.stored_profiles(acme.attributes) == OWN_PROFILES
    assert cp.stored_policies(acme.attributes) == OWN_POLICY
    page = console.get(url(acme)).content.decode()
    assert "public-pkce" in page and "tab-client-policies" in page
    assert "client-policies.policies" not in page  # not among the plain attributes


@pytest.mark.parametrize(("changes", "message"), [
    ({"client_policies": json.dumps({"policies": [{"name": "p", "conditions": [{"condition": "nope"}]}]})},
     "&#x27;nope&#x27; is not a condition of this server"),
    ({"client_policies": json.dumps({"policies": [{"name": "p", "profiles": ["pkce-only"]}]})},
     "referring not existing client profile not allowed: &#x27;pkce-only&#x27;"),
    ({"client_profiles": json.dumps({"profiles": [{"name": "fapi-2-security-profile"}]})},
     "Proposed profile name duplicated as the name of some global profile"),
    ({"client_profiles": "{not json"}, "Enter a valid JSON."),
])
def test_invalid_post_shows_the_error_and_changes_nothing(console, acme, changes, message):  # noqa: F811
    response = submit(console, url(acme), "realm_form", {"display_name": "changed", **changes})
    assert any(message in e for e in errors_of(response)), errors_of(response)
    acme.refresh_from_db()
    assert acme.display_name != "changed"
    assert cp.stored_policies(acme.attributes) == {"policies": []}


def test_plain_attributes_cannot_overwrite_the_documents(console, acme):  # noqa: F811
    acme.attributes = cp.store({"frontendUrl": "https://x.example"}, cp.parse_policies(OWN_POLICY, "", ["pkce-only"]),
                               cp.parse_profiles(OWN_PROFILES))
    acme.save()
    response = submit(console, url(acme), "realm_form", {"display_name": "kept"})
    assert not errors_of(response), errors_of(response)
    acme.refresh_from_db()
    assert acme.display_name == "kept"
    assert cp.stored_policies(acme.attributes) == OWN_POLICY
    assert acme.attributes["frontendUrl"] == "https://x.example"


def test_client_written_in_the_console_is_under_the_policies(console, acme):  # noqa: F811
    from realms.models import Client

    acme.attributes = cp.store({}, cp.parse_policies({"policies": [{
        "name": "fapi", "enabled": True, "conditions": [{"condition": "any-client"}],
        "profiles": ["fapi-2-dpop-security-profile"]}]}), None)
    acme.save()
    console.get(f"/admin/master/console/realms/client/?realm__id__exact={acme.pk}")
    add = "/admin/master/console/realms/client/add/"
    response = submit(console, add, "client_form", {"client_id": "bank", "redirect_uris": "https://bank.example/cb"})
    assert any("Invalid client metadata: token_endpoint_auth_method (invalid_client_metadata)" in e
               for e in errors_of(response)), errors_of(response)
    assert not Client.objects.filter(realm=acme, client_id="bank").exists()
    response = submit(console, add, "client_form", {"client_id": "bank", "redirect_uris": "https://bank.example/cb",
                                                    "client_authenticator_type": "client-jwt"})
    assert not errors_of(response), errors_of(response)
    bank = Client.objects.get(realm=acme, client_id="bank")
    assert bank.consent_required and not bank.full_scope_allowed  # auto-configured by the profile
    assert bank.attributes["dpop.bound.access.tokens"] == "true"
