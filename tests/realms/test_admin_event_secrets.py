"""Admin events mask exactly the keys that hold secrets (``admin_events.SECRET_KEYS``, Keycloak's
StripSecretsUtils list plus ours), the list webhook fat payloads drop too: a setting merely named
like a secret stays readable in the event's representation."""
import json
import uuid

import pytest

from realms.audit import admin_events
from realms.audit.admin_events import AuthDetails, model_representation
from realms.models import Client, Component, Event, IdentityProvider
from realms.representation import import_realm
from webhooks import snapshots

pytestmark = pytest.mark.django_db
MASK = "**********"


@pytest.fixture
def realm():
    return import_realm({"realm": "mask" + uuid.uuid4().hex[:8], "enabled": True, "adminEventsEnabled": True,
                         "adminEventsDetailsEnabled": True}).realm


def test_the_realm_import_event_masks_the_smtp_password_and_keeps_settings_named_like_secrets():
    name = "mask" + uuid.uuid4().hex[:8]
    realm = import_realm({
        "realm": name, "enabled": True, "adminEventsEnabled": True, "adminEventsDetailsEnabled": True,
        "resetPasswordAllowed": True, "passwordPolicy": "length(12)",
        "smtpServer": {"host": "mail.example.org", "from": "idp@example.org", "auth": "true", "user": "idp",
                       "password": "smtp-password-1", "authTokenClientSecret": "token-secret-1"},
        "attributes": {"actionTokenGeneratedByUserLifespan.reset-credentials": "600"},
    }, auth=AuthDetails(realm_id="master", client_id="admin-cli")).realm
    event = Event.objects.get(realm=realm, kind=Event.ADMIN, resource_type="REALM")
    rep = json.loads(event.representation)
    assert rep["smtp_server"]["password"] == MASK and rep["smtp_server"]["authTokenClientSecret"] == MASK
    assert rep["smtp_server"]["host"] == "mail.example.org" and rep["smtp_server"]["user"] == "idp"
    assert rep["attributes"]["actionTokenGeneratedByUserLifespan.reset-credentials"] == "600"
    assert rep["reset_password_allowed"] is True and rep["password_policy"] == "length(12)"
    assert "smtp-password-1" not in event.representation and "token-secret-1" not in event.representation


def test_client_identity_provider_and_component_secrets_are_masked_and_their_neighbours_kept(realm):
    client = Client.objects.create(realm=realm, client_id="app", attributes={
        "client.secret.rotated": "old-secret-1", "client_credentials.use_refresh_token": "false",
        "client.secret.creation.time": "1700000000"})
    rep = json.loads(model_representation(client))
    assert rep["attributes"] == {"client.secret.rotated": MASK, "client_credentials.use_refresh_token": "false",
                                 "client.secret.creation.time": "1700000000"}
    idp = IdentityProvider.objects.create(realm=realm, alias="corp", provider_id="oidc",
                                          config={"clientId": "corp-app", "clientSecret": "idp-secret-1",
                                                  "clientAuthMethod": "client_secret_post"})
    assert json.loads(model_representation(idp))["config"] == {
        "clientId": "corp-app", "clientSecret": MASK, "clientAuthMethod": "client_secret_post"}
    ldap = Component.objects.create(realm=realm, name="ldap", provider_id="ldap", provider_type=Component.USER_STORAGE,
                                    config={"bindDn": ["cn=admin"], "bindCredential": ["ldap-secret-1"],
                                            "credentialsEnabled": ["true"]})
    assert json.loads(model_representation(ldap))["config"] == {
        "bindDn": ["cn=admin"], "bindCredential": MASK, "credentialsEnabled": ["true"]}
    keys = Component.objects.create(realm=realm, name="rsa", provider_id="rsa", provider_type="org.keycloak.keys.KeyProvider",
                                    config={"privateKey": ["pem"], "keystorePassword": ["ks"], "keyPassword": ["kp"],
                                            "priority": ["100"]})
    assert json.loads(model_representation(keys))["config"] == {
        "privateKey": MASK, "keystorePassword": MASK, "keyPassword": MASK, "priority": ["100"]}


def test_one_list_covers_admin_events_and_webhook_snapshots():
    """Each secret key is masked in an admin event and dropped from a fat payload: the same list."""
    assert snapshots.SECRET_KEYS is admin_events.SECRET_KEYS
    for key in admin_events.SECRET_KEYS:
        nested = {"outer": {key: "s3cret", "kept": "v"}}
        assert json.loads(json.dumps(admin_events._mask(nested))) == {"outer": {key: MASK, "kept": "v"}}, key
        assert snapshots.without_secrets(nested) == {"outer": {"kept": "v"}}, key
