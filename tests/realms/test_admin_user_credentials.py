"""A user's credentials through the Admin REST API (Keycloak's UserResource): list without
secrets, remove, relabel, reorder; the storage-provider routes."""
import pytest

from realms.credentials.otp import Otp
from realms.data import realm_cache
from realms.models import Credential, Event
from realms.representation.services import create_realm
from realms.users.accounts import create_user
from tests.realms.test_admin_rest_api import realm_admin

pytestmark = pytest.mark.django_db


@pytest.fixture
def acme():
    realm_cache.clear()
    realm = create_realm("acme")
    realm.admin_events_enabled = True
    realm.save()
    return realm


@pytest.fixture
def kim(acme):
    user = create_user(acme, "kim", password="kims-password-1")
    Otp().create(user, "JBSWY3DPEHPK3PXP", label="phone")
    Otp().create(user, "KRSXG5CTMVRXEZLU", label="tablet")
    return user


def ids(api, user):
    return [c["id"] for c in api("get", f"acme/users/{user.pk}/credentials").json()]


def test_credentials_are_listed_best_first_without_secrets(acme, kim):
    api = realm_admin(acme, "helpdesk", "view-users")
    listed = api("get", f"acme/users/{kim.pk}/credentials").json()
    assert [c["id"] for c in listed] == [c.pk for c in kim.stored_credentials()]
    assert {c["type"] for c in listed} == {"password", "otp"}
    assert all("secretData" not in c and {"id", "type", "createdDate", "credentialData", "priority"} <= c.keys()
               for c in listed)
    assert {c.get("userLabel") for c in listed if c["type"] == "otp"} == {"phone", "tablet"}
    assert api("get", "acme/users/nope/credentials").json() == {"error": "User not found"}
    assert api("delete", f"acme/users/{kim.pk}/credentials/{listed[0]['id']}").status_code == 403


def test_remove_relabel_and_reorder(acme, kim):
    api = realm_admin(acme, "manager", "manage-users")
    password, first_otp, second_otp = (Credential.objects.get(user=kim, type="password"),
                                       *Credential.objects.filter(user=kim, type="otp").order_by("user_label"))

    resp = api.client.put(f"/admin/realms/acme/users/{kim.pk}/credentials/{first_otp.pk}/userLabel",
                          "my phone", content_type="text/plain")
    assert resp.status_code == 204
    assert Credential.objects.get(pk=first_otp.pk).user_label == "my phone"
    assert api.client.put(f"/admin/realms/acme/users/{kim.pk}/credentials/nope/userLabel", "x",
                          content_type="text/plain").json() == {"error": "Credential not found"}

    assert api("post", f"acme/users/{kim.pk}/credentials/{second_otp.pk}/moveToFirst").status_code == 204
    assert ids(api, kim)[0] == second_otp.pk
    assert api("post", f"acme/users/{kim.pk}/credentials/{password.pk}/moveAfter/{second_otp.pk}").status_code == 204
    assert ids(api, kim) == [second_otp.pk, password.pk, first_otp.pk]
    assert [c.pk for c in type(kim).objects.get(pk=kim.pk).stored_credentials()] == ids(api, kim)  # what sign-in reads
    assert api("post", f"acme/users/{kim.pk}/credentials/{password.pk}/moveAfter/nope").status_code == 404

    assert api("delete", f"acme/users/{kim.pk}/credentials/{first_otp.pk}").status_code == 204
    assert not Credential.objects.filter(pk=first_otp.pk).exists()
    assert api("delete", f"acme/users/{kim.pk}/credentials/{first_otp.pk}").json() == {"error": "Credential not found"}
    paths = set(Event.objects.filter(realm=acme, kind=Event.ADMIN).values_list("resource_path", flat=True))
    assert f"users/{kim.pk}/credentials/{first_otp.pk}" in paths
    assert f"users/{kim.pk}/credentials/{second_otp.pk}/moveToFirst" in paths


def test_storage_provider_routes(acme, kim):
    api = realm_admin(acme, "manager", "manage-users")
    assert api("get", f"acme/users/{kim.pk}/configured-user-storage-credential-types").json() == []
    assert api("put", f"acme/users/{kim.pk}/disable-credential-types", ["otp"]).status_code == 204
    assert api("put", f"acme/users/{kim.pk}/disable-credential-types", {"otp": 1}).status_code == 400
    assert Credential.objects.filter(user=kim, type="otp").count() == 2  # local credentials stay, as Keycloak
