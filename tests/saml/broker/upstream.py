"""The upstream SAML identity provider of the brokering tests: pysaml2's identity-provider side
(signatures and encryption by the xmlsec1 binary), served by a small WSGI server on a free
loopback port. It signs every user in without a form (``user``: the NameID and attributes it
asserts), answers AuthnRequests and LogoutRequests at its SSO and SLO services, and can start a
logout of its own (``logout_request``). ``trust(sp_metadata, **options)`` loads the SP metadata
of the test's realm (the realm's keys are new in each test)."""
import base64
import shutil
import threading
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, make_server

from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.config import IdPConfig
from saml2.saml import NAMEID_FORMAT_PERSISTENT, NameID
from saml2.server import Server

from ..sp import key_pair

AES256_CBC = "http://www.w3.org/2001/04/xmlenc#aes256-cbc"


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass


class UpstreamIdp:
    def __init__(self, directory, host="127.0.0.1"):
        self.key_pem, self.cert_pem, self.cert_b64 = key_pair("upstream-idp")
        self.key_file, self.cert_file = directory / "idp.key", directory / "idp.crt"
        self.key_file.write_bytes(self.key_pem)
        self.cert_file.write_bytes(self.cert_pem)
        self.httpd = make_server("127.0.0.1", 0, self.app, handler_class=_Quiet)
        # ``host``: the name the browser reaches it by ("localhost" makes it another site than ours).
        self.base = f"http://{host}:{self.httpd.server_port}"
        self.entity_id = f"{self.base}/idp/metadata"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.server = None
        self.options = {}
        self.user = {}
        self.requests = []  # (kind, parsed request) received, for the tests to look at
        self.sessions = {}  # name id text -> session index issued

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def sso(self):
        return f"{self.base}/sso"

    @property
    def slo(self):
        return f"{self.base}/slo"

    def trust(self, sp_metadata, *, want_authn_requests_signed=True, **options):
        """A fresh pysaml2 Server that knows the SP; ``options`` change what ``sso`` answers:
        sign_response, sign_assertion, encrypt_assertion, encrypt_cert (base64 DER)."""
        config = IdPConfig()
        config.load({
            "entityid": self.entity_id, "xmlsec_binary": shutil.which("xmlsec1"),
            "key_file": str(self.key_file), "cert_file": str(self.cert_file),
            "metadata": {"inline": [sp_metadata]}, "allow_unknown_attributes": True, "accepted_time_diff": 5,
            "service": {"idp": {
                "endpoints": {"single_sign_on_service": [(self.sso, BINDING_HTTP_REDIRECT), (self.sso, BINDING_HTTP_POST)],
                              "single_logout_service": [(self.slo, BINDING_HTTP_REDIRECT), (self.slo, BINDING_HTTP_POST)]},
                "want_authn_requests_signed": want_authn_requests_signed,
                "policy": {"default": {"lifetime": {"minutes": 15}, "attribute_restrictions": None}},
                "name_id_format": [NAMEID_FORMAT_PERSISTENT],
                "signing_algorithm": "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256",
                "digest_algorithm": "http://www.w3.org/2001/04/xmlenc#sha256",
            }},
        })
        self.server = Server(config=config)
        self.options = {"sign_response": True, "sign_assertion": True, **options}
        self.requests.clear()
        return self.server

    def metadata(self):
        from saml2.metadata import create_metadata_string

        return create_metadata_string(None, config=self.server.config, valid=None, sign=False).decode()

    # Answers ----------------------------------------------------------------------------------

    def authn_response(self, request_id, destination, sp_entity_id, **overrides):
        """A Response (XML text) for the configured user, as ``sso`` sends it."""
        options = {**self.options, **overrides}
        name_id = NameID(format=NAMEID_FORMAT_PERSISTENT, text=self.user["name_id"],
                         name_qualifier=self.entity_id, sp_name_qualifier=sp_entity_id)
        encrypt = options.get("encrypt_assertion", False)
        response = self.server.create_authn_response(
            dict(self.user.get("attributes", {})), in_response_to=request_id, destination=destination,
            sp_entity_id=sp_entity_id, name_id=name_id, userid=self.user["name_id"],
            authn={"class_ref": "urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport",
                   "authn_auth": self.entity_id},
            sign_response=options["sign_response"], sign_assertion=options["sign_assertion"],
            encrypt_assertion=encrypt, encrypted_advice_attributes=False,
            encrypt_cert_assertion=options.get("encrypt_cert") if encrypt else None,
            session_not_on_or_after=None)
        text = str(response)
        self.sessions[self.user["name_id"]] = _session_index(text)
        return text

    def app(self, environ, start_response):
        path, method = environ["PATH_INFO"], environ["REQUEST_METHOD"]
        if method == "POST":
            size = int(environ.get("CONTENT_LENGTH") or 0)
            params = {k: v[0] for k, v in parse_qs(environ["wsgi.input"].read(size).decode()).items()}
            binding = BINDING_HTTP_POST
        else:
            params = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
            binding = BINDING_HTTP_REDIRECT
        try:
            if path == "/sso":
                return self._sso(params, binding, start_response)
            if path == "/slo":
                return self._slo(params, binding, environ, start_response)
        except Exception as exc:  # the test reads the failure in the page
            start_response("400 Bad Request", [("Content-Type", "text/plain")])
            return [f"upstream refused: {exc.__class__.__name__}: {exc}".encode()]
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found"]

    def _sso(self, params, binding, start_response):
        parsed = self.server.parse_authn_request(params["SAMLRequest"], binding)
        self.requests.append(("AuthnRequest", parsed))
        message = parsed.message
        text = self.authn_response(message.id, message.assertion_consumer_service_url, message.issuer.text)
        info = self.server.apply_binding(BINDING_HTTP_POST, text, message.assertion_consumer_service_url,
                                         params.get("RelayState", ""), response=True)
        start_response("200 OK", [("Content-Type", "text/html")])
        return [info["data"].encode()]

    def _slo(self, params, binding, environ, start_response):
        if "SAMLRequest" in params:
            signed = {"relay_state": params.get("RelayState"), "sigalg": params.get("SigAlg"),
                      "signature": params.get("Signature")} if binding == BINDING_HTTP_REDIRECT else {}
            parsed = self.server.parse_logout_request(params["SAMLRequest"], binding, **signed)
            self.requests.append(("LogoutRequest", parsed))
            response = self.server.create_logout_response(parsed.message, [BINDING_HTTP_POST], sign=True)
            _, destination = self.server.pick_binding("single_logout_service", [BINDING_HTTP_POST], "spsso",
                                                      entity_id=parsed.message.issuer.text)
            info = self.server.apply_binding(BINDING_HTTP_POST, str(response), destination,
                                             params.get("RelayState", ""), response=True)
            start_response("200 OK", [("Content-Type", "text/html")])
            return [info["data"].encode()]
        parsed = self.server.parse_logout_request_response(params["SAMLResponse"], binding)
        self.requests.append(("LogoutResponse", parsed))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"logged out upstream"]

    def logout_request(self, destination, sp_entity_id, name_id_text, session_index=None, *, redirect=False):
        """An IdP-initiated LogoutRequest: (id, base64 of the signed XML for the POST binding), or
        with ``redirect`` (id, the URL of the Redirect binding, signed on the query string)."""
        name_id = NameID(format=NAMEID_FORMAT_PERSISTENT, text=name_id_text, name_qualifier=self.entity_id,
                         sp_name_qualifier=sp_entity_id)
        request_id, request = self.server.create_logout_request(
            destination, self.entity_id, name_id=name_id, session_indexes=[session_index] if session_index else None,
            sign=not redirect)
        if redirect:
            info = self.server.apply_binding(BINDING_HTTP_REDIRECT, str(request), destination, "rs-2", sign=True,
                                             sigalg="http://www.w3.org/2001/04/xmldsig-more#rsa-sha256")
            return request_id, dict(info["headers"])["Location"]
        return request_id, base64.b64encode(str(request).encode()).decode()


def _session_index(text):
    import re

    found = re.search(r'SessionIndex="([^"]+)"', text)
    return found.group(1) if found else ""
