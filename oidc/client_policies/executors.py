"""Client profile executors (Keycloak's provider ids, configuration keys and refusals). Each one
checks requests at the events it acts on (``run``: raises the OAuthError Keycloak answers) and the
client being registered or updated (``write``: auto-configures it when asked to, else refuses a
client that breaks its rule with ``invalid_client_metadata``)."""
from urllib.parse import urlsplit

from realms.representation import RepresentationError
from realms.representation.fields import as_bool, at

from .. import client_auth, jose, mtls
from ..errors import InvalidClient, InvalidClientMetadata, InvalidDpopProof, InvalidGrant, InvalidRequest
from ..request_object import InvalidRequestObject
from .events import (
    AUTHORIZATION_REQUEST,
    PUSHED_AUTHORIZATION_REQUEST,
    REGISTER,
    TOKEN_INTROSPECT,
    TOKEN_REQUEST,
    TOKEN_REVOKE,
)

AUTHORIZATION = (AUTHORIZATION_REQUEST, PUSHED_AUTHORIZATION_REQUEST)
CLIENT_AUTHENTICATED = (TOKEN_REQUEST, PUSHED_AUTHORIZATION_REQUEST, TOKEN_INTROSPECT, TOKEN_REVOKE)
AUTO = "auto-configure"
# FAPI 2.0 Security Profile §5.4: the algorithms Keycloak's secure-signature-algorithm allows.
FAPI_ALGORITHMS = ("PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
AUTHENTICATORS = (client_auth.SECRET, client_auth.SECRET_JWT, client_auth.PRIVATE_KEY_JWT, "client-x509")
# What client_auth.authenticate reports -> Keycloak's client authenticator id.
_METHOD_AUTHENTICATOR = {"client_secret_basic": client_auth.SECRET, "client_secret_post": client_auth.SECRET,
                         "client_secret_jwt": client_auth.SECRET_JWT, "private_key_jwt": client_auth.PRIVATE_KEY_JWT,
                         "tls_client_auth": "client-x509", "self_signed_tls_client_auth": "client-x509"}
PKCE_METHOD = "pkce.code.challenge.method"
DPOP_BOUND = "dpop.bound.access.tokens"
MTLS_BOUND = "tls.client.certificate.bound.access.tokens"
ACCESS_ALG, ID_ALG = "access.token.signed.response.alg", "id.token.signed.response.alg"
# Signing algorithms a client may name, checked when set (Keycloak's SecureSigningAlgorithmExecutor).
SIGNING_ATTRIBUTES = (ACCESS_ALG, ID_ALG, "user.info.response.signature.alg", "request.object.signature.alg",
                      "token.endpoint.auth.signing.alg", "authorization.signed.response.alg")


def _metadata(name):
    return InvalidClientMetadata(f"Invalid client metadata: {name}")


def _flag(name, default=False):
    return name, lambda c, p: as_bool(c.get(name, default), at(p, f"configuration.{name}"))


def _one_of(name, allowed, default=None):
    def parse(config, path):
        value = config.get(name, default)
        if value is not None and value not in allowed:
            raise RepresentationError(at(path, f"configuration.{name}"),
                                      f"unsupported value {value!r} (one of {', '.join(allowed)})")
        return value
    return name, parse


def _list_of(name, allowed):
    def parse(config, path):
        value = config.get(name, [])
        if not isinstance(value, list) or any(v not in allowed for v in value):
            raise RepresentationError(at(path, f"configuration.{name}"),
                                      f"expected a list of {', '.join(allowed)}")
        return value
    return name, parse


def _period(config, path):
    value = config.get("available-period", "3600")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise RepresentationError(at(path, "configuration.available-period"), "expected seconds") from None


class Executor:
    """One provider: its configuration keys (``settings``: key -> parse(config, path)), the events
    it acts on, and what it does there."""

    provider_id = ""
    settings = ()
    events = ()

    def check(self, config, path):
        settings = dict(self.settings)
        unknown = sorted(set(config) - set(settings))
        if unknown:
            raise RepresentationError(at(path, f"configuration.{unknown[0]}"), "not a setting of this executor")
        out = {name: parse(config, path) for name, parse in settings.items()}
        self.check_together(out, path)
        return out

    def check_together(self, config, path):
        return None

    def run(self, event, config, client, ctx):
        return None

    def write(self, event, config, client, ctx):
        return None


class SecureClientAuthenticator(Executor):
    provider_id = "secure-client-authenticator"
    settings = (_list_of("allowed-client-authenticators", AUTHENTICATORS),
                _one_of("default-client-authenticator", AUTHENTICATORS))
    events = CLIENT_AUTHENTICATED

    def check_together(self, config, path):
        default = config["default-client-authenticator"]
        if default and default not in config["allowed-client-authenticators"]:
            raise RepresentationError(at(path, "configuration.default-client-authenticator"),
                                      "not one of allowed-client-authenticators")

    def run(self, event, config, client, ctx):
        used = _METHOD_AUTHENTICATOR.get(ctx.get("auth_method"))
        if used is not None and used not in config["allowed-client-authenticators"]:
            raise InvalidClient("Configured client authentication method not allowed for client")

    def write(self, event, config, client, ctx):
        if client.public_client or client.bearer_only:
            return
        if client.client_authenticator_type in config["allowed-client-authenticators"]:
            return
        if event == REGISTER and not ctx.get("authenticator_given") and config["default-client-authenticator"]:
            client.client_authenticator_type = config["default-client-authenticator"]
            return
        raise _metadata("clientAuthenticatorType")


class PkceEnforcer(Executor):
    provider_id = "pkce-enforcer"
    settings = (_flag(AUTO),)
    events = (*AUTHORIZATION, TOKEN_REQUEST)

    def run(self, event, config, client, ctx):
        if event == TOKEN_REQUEST:
            params = ctx.get("params") or {}
            if params.get("grant_type") == "authorization_code" and not params.get("code_verifier"):
                raise InvalidGrant("PKCE code verifier not specified")
            return
        authz = ctx["authz"]
        if "code" not in authz.response_type.split():
            return
        if not authz.code_challenge:
            raise InvalidRequest("Missing parameter: code_challenge_method")
        if authz.code_challenge_method != "S256":
            raise InvalidRequest("Invalid parameter: code_challenge_method")

    def write(self, event, config, client, ctx):
        if config[AUTO]:
            client.attributes = {**(client.attributes or {}), PKCE_METHOD: "S256"}
        elif (client.attributes or {}).get(PKCE_METHOD) != "S256":
            raise _metadata("pkce.code.challenge.method")


class _ClientSwitch(Executor):
    """A client setting the profile requires, set by ``auto-configure`` or else required."""

    settings = (_flag(AUTO),)
    field = ""
    value = None
    name = ""

    def write(self, event, config, client, ctx):
        if config[AUTO]:
            setattr(client, self.field, self.value)
        elif getattr(client, self.field) != self.value:
            raise _metadata(self.name)


class ConsentRequired(_ClientSwitch):
    provider_id = "consent-required"
    field, value, name = "consent_required", True, "consentRequired"


class FullScopeDisabled(_ClientSwitch):
    provider_id = "full-scope-disabled"
    field, value, name = "full_scope_allowed", False, "fullScopeAllowed"


class _BoundTokens(Executor):
    settings = (_flag(AUTO),)
    events = (TOKEN_REQUEST,)
    attribute = ""

    def write(self, event, config, client, ctx):
        if config[AUTO]:
            client.attributes = {**(client.attributes or {}), self.attribute: "true"}
        elif (client.attributes or {}).get(self.attribute) != "true":
            raise _metadata(self.attribute)


class HolderOfKeyEnforcer(_BoundTokens):
    provider_id = "holder-of-key-enforcer"
    attribute = MTLS_BOUND

    def write(self, event, config, client, ctx):
        super().write(event, config, client, ctx)
        # Certificate-bound tokens are served only once mutual TLS is: never a setting kept unserved.
        refusal = mtls.check_attributes(client.protocol, client.attributes)
        if refusal:
            raise InvalidClientMetadata(refusal)

    def run(self, event, config, client, ctx):
        if "x5t#S256" not in ctx["exchange"].binding.cnf:
            raise InvalidGrant("Client Certification missing for MTLS HoK Token Binding")


class DpopBindEnforcer(_BoundTokens):
    provider_id = "dpop-bind-enforcer"
    settings = (_flag(AUTO), _flag("enforce-authorization-code-binding-to-dpop"),
                _flag("allow-only-refresh-token-binding"))
    events = (*AUTHORIZATION, TOKEN_REQUEST)
    attribute = DPOP_BOUND

    def check_together(self, config, path):
        if config["allow-only-refresh-token-binding"]:
            raise RepresentationError(at(path, "configuration.allow-only-refresh-token-binding"),
                                      "not supported by this server (access tokens are always bound)")

    def run(self, event, config, client, ctx):
        if event in AUTHORIZATION:
            if config["enforce-authorization-code-binding-to-dpop"] and not (ctx.get("params") or {}).get("dpop_jkt"):
                raise InvalidRequest("Missing parameter: dpop_jkt")
            return
        if "jkt" not in ctx["exchange"].binding.cnf:
            raise InvalidDpopProof("DPoP proof is missing")


def _https(uri):
    try:
        return urlsplit(uri).scheme == "https"
    except ValueError:
        return False


class SecureClientUris(Executor):
    provider_id = "secure-client-uris"
    events = (AUTHORIZATION_REQUEST,)

    def run(self, event, config, client, ctx):
        if not _https(ctx["authz"].redirect_uri):
            raise InvalidRequest("Invalid parameter: redirect_uri")

    def write(self, event, config, client, ctx):
        for uri in client.redirect_uris or []:
            if not _https(uri):
                raise InvalidClientMetadata("Invalid client metadata: redirect_uris")
        for name, value in (("rootUrl", client.root_url), ("baseUrl", client.base_url),
                            ("jwks_uri", (client.attributes or {}).get("jwks.url"))):
            if value and not value.startswith("/") and not _https(value):
                raise _metadata(name)


class SecureSession(Executor):
    provider_id = "secure-session"
    events = AUTHORIZATION

    def run(self, event, config, client, ctx):
        authz = ctx["authz"]
        if "openid" in authz.scope.split():
            if not authz.nonce:
                raise InvalidRequest("Missing parameter: nonce")
        elif not authz.state:
            raise InvalidRequest("Missing parameter: state")


class ConfidentialClient(Executor):
    provider_id = "confidential-client"
    events = (AUTHORIZATION_REQUEST, TOKEN_REQUEST)

    def run(self, event, config, client, ctx):
        if client.public_client or client.bearer_only:
            raise InvalidClient("invalid client access type")


class SecureParContent(Executor):
    """The authorization request comes by PAR (FAPI 2.0 §5.3.2.2), and a parameter the front
    channel repeats says what the pushed request said."""

    provider_id = "secure-par-content"
    events = (AUTHORIZATION_REQUEST,)

    def run(self, event, config, client, ctx):
        if not ctx.get("pushed"):
            raise InvalidRequest("Pushed Authorization Request is only allowed.")
        pushed, front = ctx.get("params") or {}, ctx.get("front_channel") or {}
        if any(pushed.get(k) != v for k, v in front.items() if k not in ("client_id", "request_uri")):
            raise InvalidRequest("PAR request did not include necessary parameters")


class SecureSignatureAlgorithm(Executor):
    provider_id = "secure-signature-algorithm"
    settings = (_one_of("default-algorithm", FAPI_ALGORITHMS, "PS256"),)
    events = (TOKEN_REQUEST,)

    def run(self, event, config, client, ctx):
        default = ctx["exchange"].realm.default_signature_algorithm
        for name in (ACCESS_ALG, ID_ALG):
            if ((client.attributes or {}).get(name) or default) not in FAPI_ALGORITHMS:
                raise InvalidRequest("not allowed signature algorithm.")

    def write(self, event, config, client, ctx):
        attributes = dict(client.attributes or {})
        for name in (ACCESS_ALG, ID_ALG):
            attributes[name] = attributes.get(name) or config["default-algorithm"]
        for name in SIGNING_ATTRIBUTES:
            if attributes.get(name) and attributes[name] not in FAPI_ALGORITHMS:
                raise _metadata(name)
        client.attributes = attributes


class SecureSignatureAlgorithmSignedJwt(Executor):
    provider_id = "secure-signature-algorithm-signed-jwt"
    settings = (_flag("require-client-assertion"),)
    events = CLIENT_AUTHENTICATED

    def run(self, event, config, client, ctx):
        assertion = ctx.get("assertion")
        if not assertion:
            if config["require-client-assertion"]:
                raise InvalidClient("client assertion required")
            return
        try:
            header = jose.parse(assertion)[0]
        except jose.JoseError:
            raise InvalidClient("Invalid client assertion") from None
        if header.get("alg") not in FAPI_ALGORITHMS:
            raise InvalidClient("not allowed signature algorithm.")


class SecureRequestObject(Executor):
    provider_id = "secure-request-object"
    settings = (("available-period", _period), _flag("verify-nbf"), _flag("encryption-required"))
    events = AUTHORIZATION

    def check_together(self, config, path):
        if config["encryption-required"]:
            raise RepresentationError(at(path, "configuration.encryption-required"),
                                      "not supported by this server (request objects are checked after decryption)")

    def run(self, event, config, client, ctx):
        claims = ctx.get("request_object")
        if not claims:
            raise InvalidRequest("Missing parameter: request")
        for name in ("exp", "aud", *(("nbf",) if config["verify-nbf"] else ())):
            if name not in claims:
                raise InvalidRequestObject(f"Missing parameter in the 'request' object: {name}")
        if config["verify-nbf"] and claims["exp"] - claims["nbf"] > config["available-period"]:
            raise InvalidRequestObject("Request's available period is long")


EXECUTORS = {e.provider_id: e for e in (
    SecureClientAuthenticator(), PkceEnforcer(), ConsentRequired(), FullScopeDisabled(), HolderOfKeyEnforcer(),
    DpopBindEnforcer(), SecureClientUris(), SecureSession(), ConfidentialClient(), SecureParContent(),
    SecureSignatureAlgorithm(), SecureSignatureAlgorithmSignedJwt(), SecureRequestObject(),
)}
