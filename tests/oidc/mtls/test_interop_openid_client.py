"""panva's openid-client v6 (the pinned release and the newest) with mutual TLS against a
``manage.py start_dev`` of this module's own, behind a TLS terminating proxy the test starts
(``proxy.TlsProxy``: it asks for a client certificate and passes it on in ``ssl-client-cert``;
the server trusts its loopback address): client credentials with ``tls_client_auth`` through
the ``mtls_endpoint_aliases``, a certificate-bound token, introspection and userinfo with the
certificate, and the refusals without it or with another (tests/js/openid-client-mtls.mjs)."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.idp.test_modes import base_env, free_port, manage, stop, wait_for

from .conftest import TLS_DN, Pki
from .proxy import TlsProxy

ROOT = Path(__file__).resolve().parents[3]
JS = ROOT / "tests" / "js"
PACKAGES = {"openid-client": "6.8.", "openid-client-newest": "6.9."}
REALM = "mtlsjs"


def representation():
    return {"realm": REALM, "enabled": True, "clients": [
        {"clientId": "tls-service", "clientAuthenticatorType": "client-x509", "serviceAccountsEnabled": True,
         "standardFlowEnabled": False,
         "attributes": {"x509.subjectdn": TLS_DN, "x509.allow.regex.pattern.comparison": "false",
                        "tls.client.certificate.bound.access.tokens": "true"}},
    ]}


@pytest.fixture(scope="module")
def mtls_server(tmp_path_factory):
    """(issuer, the files of the CA and the client certificates) of a start_dev behind TlsProxy."""
    var = tmp_path_factory.mktemp("mtls-start-dev")
    pki = Pki()
    files = {}
    for name, issued in {"ca": pki.ca, "server": pki.issue("CN=127.0.0.1", server_ip="127.0.0.1"),
                         "client": pki.issue(TLS_DN), "other": pki.issue("CN=someone-else")}.items():
        (var / f"{name}.pem").write_text(issued.pem)
        (var / f"{name}.key").write_text(issued.key_pem)
        files[name] = str(var / f"{name}.pem"), str(var / f"{name}.key")
    http, mgmt = free_port(), free_port()
    proxy = TlsProxy(http, cert_file=files["server"][0], key_file=files["server"][1], ca_file=files["ca"][0])
    env = base_env(DJANGO_SETTINGS_MODULE="idp.settings.dev", IDP_VAR_DIR=str(var),
                   IDP_BASE_URL=f"https://127.0.0.1:{proxy.port}", IDP_TRUSTED_PROXIES="127.0.0.1",
                   IDP_CLIENT_CERT_HEADER="ssl-client-cert")
    proc = manage("start_dev", "--http-port", str(http), "--management-port", str(mgmt), env=env)
    try:
        wait_for(f"http://127.0.0.1:{mgmt}/health/ready", proc=proc)
        realm_file = var / f"{REALM}.json"
        realm_file.write_text(json.dumps(representation()))
        imported = manage("import_realm", str(realm_file), env=env)
        out, _ = imported.communicate(timeout=120)
        assert imported.returncode == 0, out
        yield f"https://127.0.0.1:{proxy.port}/realms/{REALM}", files, proxy
    finally:
        stop(proc)
        proxy.close()
        print(proc.stdout.read())


@pytest.mark.parametrize("package", PACKAGES)
def test_openid_client_mutual_tls(mtls_server, package):
    installed = JS / "node_modules" / package / "package.json"
    assert json.loads(installed.read_text())["version"].startswith(PACKAGES[package])
    issuer, files, proxy = mtls_server
    done = subprocess.run(["node", "openid-client-mtls.mjs"], cwd=JS, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OPENID_CLIENT": package, "IDP_ISSUER": issuer,
                               "IDP_CLIENT_ID": "tls-service", "IDP_CA": files["ca"][0],
                               "IDP_CLIENT_CERT": files["client"][0], "IDP_CLIENT_KEY": files["client"][1],
                               "IDP_OTHER_CERT": files["other"][0], "IDP_OTHER_KEY": files["other"][1]})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mtls script: ok" in done.stdout
    assert any(path.endswith("/token") and with_cert for _, path, with_cert in proxy.forwarded)
