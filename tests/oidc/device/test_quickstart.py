"""Keycloak's device-grant quickstart realm (tests/data/keycloak, imported as is): no warning at
import, and its device-client answers with the lifespan and interval of its attributes."""
import json
from pathlib import Path

from realms.representation import import_realm
from tests.oidc.device.conftest import authorize

QUICKSTART = Path(__file__).resolve().parents[2] / "data" / "keycloak" / "quickstarts-device-grant-realm.json"


def test_quickstart_imports_without_warning_and_its_client_works(db, fresh_caches, http):
    result = import_realm(json.loads(QUICKSTART.read_text()))
    assert result.warnings == []
    body = authorize(http, result.realm, "device-client").json()
    assert (body["expires_in"], body["interval"]) == (600, 5)
    assert body["verification_uri"] == "http://testserver/realms/device-flow-quickstart/device"
