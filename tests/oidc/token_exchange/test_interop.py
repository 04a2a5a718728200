"""Peers of the token exchange against ``manage.py start_dev`` (its own process, SQLite):
python-keycloak's ``KeycloakOpenID.exchange_token()``, panva's openid-client v6 (the pinned
release and the newest) ``genericGrantRequest``, and a plain RFC 8693 form POST."""
import base64
import json
import os
import subprocess
from pathlib import Path

import pytest
import requests
from keycloak import KeycloakOpenID
from keycloak.exceptions import KeycloakPostError

from .conftest import ACCESS, GRANT, PASSWORD, REFRESH, SECRET, representation

ROOT = Path(__file__).resolve().parents[3]
JS = ROOT / "tests" / "js"
PACKAGES = {"openid-client": "6.8.", "openid-client-newest": "6.9."}


def payload(token):
    return json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))


def test_python_keycloak_exchange_token(start_dev):
    base, import_realm = start_dev
    import_realm(representation("tx-pykc"))
    initial = KeycloakOpenID(server_url=base, realm_name="tx-pykc", client_id="initial", client_secret_key=SECRET)
    subject = initial.token("alice", PASSWORD)
    # python-keycloak asks for a refresh token by default: the client must allow SAME_SESSION.
    refresher = KeycloakOpenID(server_url=base, realm_name="tx-pykc", client_id="requester", client_secret_key=SECRET)
    with pytest.raises(KeycloakPostError) as refused:
        refresher.exchange_token(subject["access_token"], subject_token_type=ACCESS)
    assert refused.value.response_code == 400 and b"requested_token_type unsupported" in refused.value.response_body
    exchanged = refresher.exchange_token(subject["access_token"], audience="target", subject_token_type=ACCESS,
                                         requested_token_type=ACCESS)
    assert exchanged["issued_token_type"] == ACCESS and exchanged["id_token"]
    assert payload(exchanged["access_token"])["aud"] == "target"
    assert refresher.userinfo(exchanged["access_token"])["preferred_username"] == "alice"


def test_python_keycloak_refresh_token_same_session(start_dev):
    base, import_realm = start_dev
    rep = representation("tx-pykc-rt")
    for client in rep["clients"]:
        if client["clientId"] == "initial":
            client["protocolMappers"].append({"name": "to-refresher", "protocol": "openid-connect",
                                              "protocolMapper": "oidc-audience-mapper",
                                              "config": {"included.client.audience": "refresher",
                                                         "access.token.claim": "true"}})
    import_realm(rep)
    subject = KeycloakOpenID(server_url=base, realm_name="tx-pykc-rt", client_id="initial",
                             client_secret_key=SECRET).token("alice", PASSWORD)
    refresher = KeycloakOpenID(server_url=base, realm_name="tx-pykc-rt", client_id="refresher",
                               client_secret_key=SECRET)
    exchanged = refresher.exchange_token(subject["access_token"], subject_token_type=ACCESS)
    assert exchanged["issued_token_type"] == REFRESH and exchanged["refresh_token"]
    assert refresher.refresh_token(exchanged["refresh_token"])["access_token"]


def test_plain_form_post(start_dev):
    base, import_realm = start_dev
    import_realm(representation("tx-form"))
    url = f"{base}/realms/tx-form/protocol/openid-connect/token"
    subject = requests.post(url, data={"grant_type": "password", "username": "alice", "password": PASSWORD},
                            auth=("initial", SECRET), timeout=10).json()
    answer = requests.post(url, data={"grant_type": GRANT, "subject_token": subject["access_token"],
                                      "subject_token_type": ACCESS, "audience": ["target", "plain"]},
                           auth=("requester", SECRET), timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.headers["Cache-Control"] == "no-store"
    assert sorted(payload(answer.json()["access_token"])["aud"]) == ["plain", "target"]
    no_grant = requests.post(url, data={"grant_type": GRANT, "subject_token": subject["access_token"],
                                        "subject_token_type": ACCESS}, auth=("plain", SECRET), timeout=10)
    assert no_grant.status_code == 400 and no_grant.json()["error"] == "invalid_request"


@pytest.mark.parametrize("package", PACKAGES)
def test_openid_client_token_exchange(start_dev, package):
    installed = JS / "node_modules" / package / "package.json"
    assert json.loads(installed.read_text())["version"].startswith(PACKAGES[package])
    base, import_realm = start_dev
    name = "txjs-" + package.rsplit("-", 1)[-1]
    import_realm(representation(name))
    done = subprocess.run(["node", "openid-client-exchange.mjs"], cwd=JS, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OPENID_CLIENT": package, "IDP_ISSUER": f"{base}/realms/{name}",
                               "IDP_CLIENT_ID": "requester", "IDP_CLIENT_SECRET": SECRET,
                               "SUBJECT_CLIENT_ID": "initial", "USERNAME": "alice", "PASSWORD": PASSWORD})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "token exchange script: ok" in done.stdout
