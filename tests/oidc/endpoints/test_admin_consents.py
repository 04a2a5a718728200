"""A user's consents through the Admin REST API (Keycloak's ``users/{id}/consents``): listed with
their scopes and offline tokens; revoking one also stops the client's offline tokens."""
from oidc.models import ConsentGrant
from realms.models import ClientScope, Event
from tests.realms.test_admin_rest_api import realm_admin

from .conftest import client_of, refresh
from .test_refresh import tokens_for


def test_consents_listed_and_revoked_with_offline_tokens(http, realm, alice):
    realm.admin_events_enabled = True
    realm.save()
    body, _ = tokens_for(http, realm, alice, scope="openid offline_access")
    spa = client_of(realm, "spa")
    profile = ClientScope.objects.get(realm=realm, name="profile")
    ConsentGrant.objects.create(realm=realm, user=alice, client=spa, scope_ids=[profile.pk])
    api = realm_admin(realm, "helpdesk", "manage-users")

    listed = {c["clientId"]: c for c in api("get", f"{realm.name}/users/{alice.pk}/consents").json()}
    app = client_of(realm, "app")
    assert listed["app"]["additionalGrants"] == [{"client": app.pk, "key": "Offline Token"}]
    assert listed["app"]["grantedClientScopes"] == [] and listed["app"]["createdDate"] is None
    assert listed["spa"]["grantedClientScopes"] == ["profile"] and listed["spa"]["additionalGrants"] == []
    assert isinstance(listed["spa"]["createdDate"], int)

    assert refresh(http, realm, body["refresh_token"]).status_code == 200
    assert api("delete", f"{realm.name}/users/{alice.pk}/consents/app").status_code == 204
    assert refresh(http, realm, body["refresh_token"]).json()["error"] == "invalid_grant"
    assert api("delete", f"{realm.name}/users/{alice.pk}/consents/app").json() == {
        "error": "Consent nor offline token not found"}
    assert api("delete", f"{realm.name}/users/{alice.pk}/consents/spa").status_code == 204
    assert not ConsentGrant.objects.filter(user=alice).exists()
    assert api("get", f"{realm.name}/users/{alice.pk}/consents").json() == []
    assert api("delete", f"{realm.name}/users/{alice.pk}/consents/nope").json() == {"error": "Client not found"}
    assert Event.objects.filter(realm=realm, kind=Event.ADMIN, resource_path=f"users/{alice.pk}/consents/app").exists()
    viewer = realm_admin(realm, "viewer", "view-users")
    assert viewer("get", f"{realm.name}/users/{alice.pk}/consents").status_code == 200
    assert viewer("delete", f"{realm.name}/users/{alice.pk}/consents/spa").status_code == 403
