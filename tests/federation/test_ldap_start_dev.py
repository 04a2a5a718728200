"""An LDAP realm in Keycloak's export format imported into ``manage.py start_dev`` as a developer
runs it (its own process, SQLite): a directory user signs in with the password grant (their row
imported at the first sign-in) and the Admin API's full sync imports the others."""
import requests

from .slapd import PEOPLE, SERVICE_DN, SERVICE_PASSWORD
from .test_ldap import MAPPER

SECRET = "ldap-dev-secret-" + "s" * 24
COMPONENT_ID = "f2b5c0d4-ldap-0000-0000-0000000000de"


def _realm(directory):
    def mapper(name, ldap_attr, model, always="true"):
        return {"name": name, "providerId": "user-attribute-ldap-mapper", "subComponents": {}, "config": {
            "ldap.attribute": [ldap_attr], "is.mandatory.in.ldap": ["false"], "read.only": ["true"],
            "always.read.value.from.ldap": [always], "user.model.attribute": [model]}}

    config = {"vendor": ["other"], "connectionUrl": [directory.url], "authType": ["simple"], "bindDn": [SERVICE_DN],
              "bindCredential": [SERVICE_PASSWORD], "usersDn": [PEOPLE], "usernameLDAPAttribute": ["uid"],
              "rdnLDAPAttribute": ["uid"], "uuidLDAPAttribute": ["entryUUID"],
              "userObjectClasses": ["inetOrgPerson, organizationalPerson"], "searchScope": ["1"],
              "editMode": ["READ_ONLY"], "importEnabled": ["true"], "pagination": ["true"],
              "batchSizeForSync": ["100"], "fullSyncPeriod": ["-1"], "changedSyncPeriod": ["-1"],
              "cachePolicy": ["DEFAULT"], "enabled": ["true"], "priority": ["0"], "syncRegistrations": ["false"],
              "trustEmail": ["false"], "validatePasswordPolicy": ["false"], "connectionPooling": ["true"]}
    return {
        "realm": "ldap-dev", "enabled": True,
        "clients": [{"clientId": "backend", "secret": SECRET, "directAccessGrantsEnabled": True,
                     "redirectUris": ["http://127.0.0.1/cb"]}],
        "components": {"org.keycloak.storage.UserStorageProvider": [{
            "id": COMPONENT_ID, "name": "ldap", "providerId": "ldap", "config": config, "subComponents": {
                MAPPER: [mapper("username", "uid", "username", always="false"), mapper("last name", "sn", "lastName"),
                         mapper("email", "mail", "email", always="false")]}}]},
    }


def test_an_ldap_realm_signs_in_and_syncs_under_start_dev(start_dev, directory):
    base, import_realm = start_dev
    for uid in ("walt", "emily", "langston"):
        directory.add_user(uid, f"{uid}-password", sn=uid.title(), mail=f"{uid}@example.org")
    import_realm(_realm(directory))

    token = requests.post(f"{base}/realms/ldap-dev/protocol/openid-connect/token", auth=("backend", SECRET),
                          data={"grant_type": "password", "username": "walt", "password": "walt-password"},
                          timeout=30)
    assert token.status_code == 200, token.content
    userinfo = requests.get(f"{base}/realms/ldap-dev/protocol/openid-connect/userinfo",
                            headers={"Authorization": f"Bearer {token.json()['access_token']}"}, timeout=30)
    assert userinfo.json()["email"] == "walt@example.org"

    admin = requests.post(f"{base}/realms/master/protocol/openid-connect/token", timeout=30,
                          data={"grant_type": "password", "client_id": "admin-cli", "username": "boot",
                                "password": "boot-pass-1"}).json()["access_token"]
    api = requests.Session()
    api.headers["Authorization"] = f"Bearer {admin}"
    synced = api.post(f"{base}/admin/realms/ldap-dev/user-storage/{COMPONENT_ID}/sync?action=triggerFullSync",
                      timeout=60)
    assert synced.status_code == 200, synced.content
    assert synced.json()["added"] == 2 and synced.json()["failed"] == 0  # walt was imported at his sign-in
    users = api.get(f"{base}/admin/realms/ldap-dev/users", timeout=30).json()
    assert sorted((u["username"], u["lastName"], u["federationLink"]) for u in users) == [
        ("emily", "Emily", COMPONENT_ID), ("langston", "Langston", COMPONENT_ID), ("walt", "Walt", COMPONENT_ID)]
