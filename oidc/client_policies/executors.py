"""Client profile executors (Keycloak's provider ids, configuration keys and refusals). Each one
checks requests at the events it acts on (``run``: raises the OAuthError Keycloak answers) and the
client being registered or updated (``write``: auto-configures it when asked to, else refuses a
client that breaks its rule with Keycloak's error, mostly ``invalid_client_metadata``). A
configuration key an executor does not have is refused where the profile is written."""
import json
import time

from realms.http.web import realm_url
from realms.representation import RepresentationError
from realms.representation.fields import as_bool, at

from .. import client_auth, jose, mtls
from ..errors import InvalidClient, InvalidClientMetadata, InvalidDpopProof, InvalidRequest, OAuthError
from ..request_object import InvalidRequestObject, InvalidRequestUri
from .events import (
    AUTHORIZATION_REQUEST,
    BACKCHANNEL_TOKEN_REQUEST,
    PUSHED_AUTHORIZATION_REQUEST,
    REGISTER,
    SERVICE_ACCOUNT_TOKEN_REQUEST,
    TOKEN_INTROSPECT,
    TOKEN_REFRESH,
    TOKEN_REQUEST,
    TOKEN_REVOKE,
    USERINFO_REQUEST,
)

# Keycloak's events of each executor (a token request's event is its grant's: events.py).
CLIENT_AUTHENTICATED = (TOKEN_REQUEST, TOKEN_REFRESH, TOKEN_INTROSPECT, TOKEN_REVOKE)
AUTO = "auto-configure"
# Keycloak's FapiConstant.ALLOWED_ALGORITHMS.
FAPI_ALGORITHMS = ("PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
AUTHENTICATORS = (client_auth.SECRET, client_auth.SECRET_JWT, client_auth.PRIVATE_KEY_JWT, "client-x509")
PKCE_METHOD = "pkce.code.challenge.method"
DPOP_BOUND = "dpop.bound.access.tokens"
MTLS_BOUND = "tls.client.certificate.bound.access.tokens"
# What secure-signature-algorithm sets (when unset) or checks; the access token's only through the
# Admin API (RFC 7591 names no metadata for it).
SIGNING_ATTRIBUTES = ("user.info.response.signature.alg", "request.object.signature.alg",
                      "id.token.signed.response.alg", "token.endpoint.auth.signing.alg")
ADMIN_SIGNING_ATTRIBUTES = ("access.token.signed.response.alg",)
# Authorization request parameters a request object must repeat (Keycloak's KNOWN_REQ_PARAMS).
KNOWN_PARAMS = ("client_id", "response_type", "response_mode", "redirect_uri", "state", "scope", "login_hint",
                "prompt", "nonce", "max_age", "ui_locales", "claims", "code_challenge", "code_challenge_method",
                "acr_values", "dpop_jkt")


class InvalidRegistration(OAuthError):
    """Keycloak's Errors.INVALID_REGISTRATION, what consent-required and full-scope-disabled answer."""

    error = "invalid_registration"


class CodeVerifierMissing(OAuthError):
    """Keycloak's Errors.CODE_VERIFIER_MISSING, pkce-enforcer's refusal at the token endpoint."""

    error = "code_verifier_missing"


def _metadata(what):
    return InvalidClientMetadata(f"Invalid client metadata: {what}")


def _flag(name):
    return name, lambda c, p: as_bool(c.get(name, False), at(p, f"configuration.{name}"))


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


def _seconds(name, default):
    def parse(config, path):
        try:
            return int(config.get(name, default))
        except (TypeError, ValueError):
            raise RepresentationError(at(path, f"configuration.{name}"), "expected seconds") from None
    return name, parse


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
        if not client.public_client and client.client_authenticator_type not in config["allowed-client-authenticators"]:
            raise InvalidRequest("Configured client authentication method not allowed for client")

    def write(self, event, config, client, ctx):
        if config["default-client-authenticator"] and not ctx.get("authenticator_given"):
            client.client_authenticator_type = config["default-client-authenticator"]
        if client.public_client:
            return  # the access type is another executor's (confidential-client)
        if client.client_authenticator_type not in config["allowed-client-authenticators"]:
            raise _metadata("token_endpoint_auth_method")


class PkceEnforcer(Executor):
    provider_id = "pkce-enforcer"
    settings = (_flag(AUTO),)
    events = (AUTHORIZATION_REQUEST, TOKEN_REQUEST)

    def run(self, event, config, client, ctx):
        params = ctx.get("params") or {}
        if event == TOKEN_REQUEST:  # the authorization code's
            if not params.get("code_verifier"):
                raise CodeVerifierMissing("PKCE code verifier not specified")
            return
        method = params.get("code_challenge_method")
        if not method:
            raise InvalidRequest("Missing parameter: code_challenge_method")
        if method != "S256":
            raise InvalidRequest("Invalid parameter: invalid code_challenge_method")
        configured = (client.attributes or {}).get(PKCE_METHOD)
        if configured and configured != method:
            raise InvalidRequest("Invalid parameter: code challenge method is not configured one")
        if not params.get("code_challenge"):
            raise InvalidRequest("Missing parameter: code_challenge")

    def write(self, event, config, client, ctx):
        if config[AUTO]:
            client.attributes = {**(client.attributes or {}), PKCE_METHOD: "S256"}
        if (client.attributes or {}).get(PKCE_METHOD) != "S256":
            raise _metadata("code_challenge_method")


class _ClientSwitch(Executor):
    """A client setting the profile requires: set by ``auto-configure``, else required."""

    settings = (_flag(AUTO),)
    field = ""
    value = None
    refusal = ""

    def write(self, event, config, client, ctx):
        if config[AUTO]:
            setattr(client, self.field, self.value)
        if getattr(client, self.field) != self.value:
            raise InvalidRegistration(self.refusal)


class ConsentRequired(_ClientSwitch):
    provider_id = "consent-required"
    field, value, refusal = "consent_required", True, "Client is required to enable consentRequired"


class FullScopeDisabled(_ClientSwitch):
    provider_id = "full-scope-disabled"
    field, value, refusal = "full_scope_allowed", False, "Not permitted to enable fullScopeAllowed"


class _BoundTokens(Executor):
    settings = (_flag(AUTO),)
    attribute = ""
    disabled = ""

    def write(self, event, config, client, ctx):
        if config[AUTO]:
            client.attributes = {**(client.attributes or {}), self.attribute: "true"}
        if (client.attributes or {}).get(self.attribute) != "true":
            raise _metadata(self.disabled)


class HolderOfKeyEnforcer(_BoundTokens):
    provider_id = "holder-of-key-enforcer"
    events = (TOKEN_REQUEST, SERVICE_ACCOUNT_TOKEN_REQUEST, BACKCHANNEL_TOKEN_REQUEST)
    attribute, disabled = MTLS_BOUND, "MTLS token in disabled"

    def run(self, event, config, client, ctx):
        if "x5t#S256" not in ctx["exchange"].binding.cnf:
            raise InvalidRequest("Client Certification missing for MTLS HoK Token Binding")

    def write(self, event, config, client, ctx):
        super().write(event, config, client, ctx)
        # The binding's own checks (a value mutual TLS cannot serve is refused, never kept).
        refusal = mtls.check_attributes(client.protocol, client.attributes)
        if refusal:
            raise InvalidClientMetadata(refusal)


class DpopBindEnforcer(_BoundTokens):
    provider_id = "dpop-bind-enforcer"
    settings = (_flag(AUTO), _flag("enforce-authorization-code-binding-to-dpop"),
                _flag("allow-only-refresh-token-binding"))
    events = (AUTHORIZATION_REQUEST, TOKEN_REQUEST, TOKEN_REFRESH, BACKCHANNEL_TOKEN_REQUEST, USERINFO_REQUEST)
    attribute, disabled = DPOP_BOUND, "DPoP token in disabled"

    def check_together(self, config, path):
        if config["allow-only-refresh-token-binding"]:
            raise RepresentationError(at(path, "configuration.allow-only-refresh-token-binding"),
                                      "not supported by this server (access tokens are always bound)")

    def run(self, event, config, client, ctx):
        if event == AUTHORIZATION_REQUEST:
            if config["enforce-authorization-code-binding-to-dpop"] and not (ctx.get("params") or {}).get("dpop_jkt"):
                raise InvalidRequest("Missing parameter: dpop_jkt")
        elif "HTTP_DPOP" not in ctx["request"].META:
            raise InvalidDpopProof("DPoP proof is missing")


def _multivalued(attributes, name):
    return [v for v in (attributes.get(name) or "").split("##") if v]


class SecureClientUris(Executor):
    provider_id = "secure-client-uris"
    settings = (_flag("allow-http-on-localhost"),)
    events = (AUTHORIZATION_REQUEST,)

    def run(self, event, config, client, ctx):
        uri = ctx["authz"].redirect_uri
        if not uri:
            raise InvalidRequest("no redirect_uri specified.")
        local = uri.startswith(("http://localhost", "http://127.0.0.1")) and config["allow-http-on-localhost"]
        if "*" in uri or not (uri.startswith("https://") or local):
            raise InvalidRequest("Invalid redirect_uri")

    def write(self, event, config, client, ctx):
        attributes = client.attributes or {}
        redirect_uris = list(client.redirect_uris or [])
        post_logout = [u for u in _multivalued(attributes, "post.logout.redirect.uris") if u != "+"]
        for name, uris in (("rootUrl", [client.root_url]), ("adminUrl", [client.admin_url]),
                           ("baseUrl", [client.base_url]), ("logoutUrl", [attributes.get("backchannel.logout.url")]),
                           ("frontChannelLogoutUrl", [attributes.get("frontchannel.logout.url")]),
                           ("redirectUris", redirect_uris), ("jwksUri", [attributes.get("jwks.url")]),
                           ("requestUris", _multivalued(attributes, "request.uris")),
                           ("postLogoutUris", post_logout), ("logoUri", [attributes.get("logoUri")]),
                           ("tosUri", [attributes.get("tosUri")]), ("policyUri", [attributes.get("policyUri")])):
            for uri in uris:
                if uri and (not uri.startswith("https://") or "*" in uri):
                    raise InvalidClientMetadata(f"Invalid {name}")
        if event == REGISTER and client.root_url and not redirect_uris:
            client.redirect_uris = [client.root_url]  # rather than a wildcard made from it later


class SecureSession(Executor):
    provider_id = "secure-session"
    events = (AUTHORIZATION_REQUEST,)

    def run(self, event, config, client, ctx):
        authz = ctx["authz"]
        if "openid" in authz.scope.split():
            if not authz.nonce:
                raise InvalidRequest("Missing parameter: nonce")
        elif not authz.state:
            raise InvalidRequest("Missing parameter: state")


class ConfidentialClient(Executor):
    provider_id = "confidential-client"
    events = (AUTHORIZATION_REQUEST, TOKEN_REQUEST, SERVICE_ACCOUNT_TOKEN_REQUEST, BACKCHANNEL_TOKEN_REQUEST)

    def run(self, event, config, client, ctx):
        if client.public_client or client.bearer_only:
            raise InvalidClient("invalid client access type")


class SecureParContent(Executor):
    """The authorization request names a pushed one, and the front channel adds no parameter the
    push did not carry."""

    provider_id = "secure-par-content"
    events = (AUTHORIZATION_REQUEST,)

    def run(self, event, config, client, ctx):
        front = ctx.get("front_channel") or {}
        if not front.get("request_uri"):
            raise InvalidRequest("request_uri not included.")
        if not ctx.get("pushed"):
            raise InvalidRequest("PAR request_uri not included.")
        pushed = {*(ctx.get("params") or {}), *(ctx.get("request_object") or {})}
        if any(name not in pushed and name != "request_uri" for name in front):
            raise InvalidRequest("PAR request did not include necessary parameters")


class SecureSignatureAlgorithm(Executor):
    provider_id = "secure-signature-algorithm"
    settings = (_one_of("default-algorithm", FAPI_ALGORITHMS, "PS256"),)

    def write(self, event, config, client, ctx):
        attributes = dict(client.attributes or {})
        names = SIGNING_ATTRIBUTES + (ADMIN_SIGNING_ATTRIBUTES if ctx.get("by_admin_api") else ())
        for name in names:
            if not attributes.get(name):
                attributes[name] = config["default-algorithm"]
            elif attributes[name] not in FAPI_ALGORITHMS:
                raise InvalidRequest("not allowed signature algorithm.")
        client.attributes = attributes


class SecureSignatureAlgorithmSignedJwt(Executor):
    provider_id = "secure-signature-algorithm-signed-jwt"
    settings = (_flag("require-client-assertion"),)
    events = CLIENT_AUTHENTICATED

    def run(self, event, config, client, ctx):
        assertion = (ctx.get("params") or {}).get("client_assertion")
        if not assertion and not config["require-client-assertion"]:
            return
        try:
            alg = jose.parse(assertion)[0].get("alg")
        except jose.JoseError:
            raise InvalidRequest("not allowed input format.") from None
        if alg not in FAPI_ALGORITHMS:
            raise InvalidRequest("not allowed signature algorithm.")


class SecureRequestObject(Executor):
    provider_id = "secure-request-object"
    settings = (_seconds("available-period", 3600), _flag("verify-nbf"), _flag("encryption-required"),
                _seconds("allowed-clock-skew", 15))
    events = (AUTHORIZATION_REQUEST,)

    def check_together(self, config, path):
        if config["encryption-required"]:
            raise RepresentationError(at(path, "configuration.encryption-required"),
                                      "not supported by this server (whether a request object was encrypted "
                                      "is not kept)")

    def run(self, event, config, client, ctx):
        front = ctx.get("front_channel") or {}
        if not front.get("request") and not front.get("request_uri"):
            raise InvalidRequest("Missing parameter: 'request' or 'request_uri'")
        claims = ctx.get("request_object")
        if not claims:
            raise InvalidRequest("Invalid parameter: : 'request' or 'request_uri'")
        # A pushed request's object is refused as its request_uri (Keycloak's throwClientPolicyException).
        refuse = InvalidRequestObject if not ctx.get("pushed") else InvalidRequestUri
        if not front.get("scope") and not claims.get("scope"):
            raise InvalidRequest("Parameter 'scope' missing in the request parameters or in 'request' object")
        now, skew = int(time.time()), config["allowed-clock-skew"]
        if not isinstance(claims.get("exp"), int):
            raise refuse("Missing parameter in the 'request' object: exp")
        if now > claims["exp"]:
            raise refuse("Request Expired")
        if config["verify-nbf"]:
            if not isinstance(claims.get("nbf"), int):
                raise refuse("Missing parameter in the 'request' object: nbf")
            if now < claims["nbf"] - skew:
                raise refuse("Request not yet being processed")
            if claims["exp"] - claims["nbf"] > config["available-period"]:
                raise refuse("Request's available period is long")
        if isinstance(claims.get("iat"), int) and now < claims["iat"] - skew:
            raise refuse("Request issued in the future")
        aud = claims.get("aud")
        if aud is None:
            raise refuse("Missing parameter in the 'request' object: aud")
        audiences = aud if isinstance(aud, list) else [aud]
        if not audiences:
            raise refuse("Missing parameter value in the 'request' object: aud")
        if realm_url(ctx["request"], client.realm.name) not in audiences:
            raise refuse("Invalid parameter in the 'request' object: aud")
        if any(name in front and str(claims.get(name)) != front[name] for name in KNOWN_PARAMS):
            raise InvalidRequest("Invalid parameter. Parameters in 'request' object not matching with request "
                                 "parameters")


class RejectImplicitGrant(Executor):
    provider_id = "reject-implicit-grant"
    settings = (_flag(AUTO),)
    events = (AUTHORIZATION_REQUEST, PUSHED_AUTHORIZATION_REQUEST)

    def run(self, event, config, client, ctx):
        response_type = ctx["authz"].response_type
        if event == PUSHED_AUTHORIZATION_REQUEST:
            if not response_type:
                raise InvalidRequest("No response type.")
            if response_type != "code":
                raise InvalidRequest("Implicit/Hybrid flow is prohibited.")
        elif {"token", "id_token"} & set(response_type.split()):
            raise InvalidRequest("Implicit/Hybrid flow is prohibited.")

    def write(self, event, config, client, ctx):
        if config[AUTO]:
            client.implicit_flow_enabled = False
        if client.implicit_flow_enabled:
            raise _metadata("implicit flow enabled")


class SecureClientAuthenticationAssertion(Executor):
    """A client assertion names this realm's issuer as its one audience (FAPI 2.0 §5.3.2.1)."""

    provider_id = "secure-client-authentication-assertion"
    events = (PUSHED_AUTHORIZATION_REQUEST, *CLIENT_AUTHENTICATED)

    def run(self, event, config, client, ctx):
        form = ctx["form"] if "form" in ctx else ctx.get("params") or {}
        assertion = form.get("client_assertion")
        if client.public_client or not assertion or form.get("client_assertion_type") != client_auth.ASSERTION_TYPE:
            return
        parts = assertion.split(".")
        if not 2 <= len(parts) <= 3:
            raise InvalidRequest("invalid client assertion format")
        try:
            claims = json.loads(jose.b64d(parts[1]))
        except (ValueError, jose.JoseError):
            raise InvalidRequest("invalid client assertion") from None
        aud = claims.get("aud") if isinstance(claims, dict) else None
        audiences = aud if isinstance(aud, list) else [aud] if aud is not None else []
        if len(audiences) != 1 or audiences[0] != realm_url(ctx["request"], client.realm.name):
            raise InvalidRequest("invalid audience in client assertion")


EXECUTORS = {e.provider_id: e for e in (
    SecureClientAuthenticator(), PkceEnforcer(), ConsentRequired(), FullScopeDisabled(), HolderOfKeyEnforcer(),
    DpopBindEnforcer(), SecureClientUris(), SecureSession(), ConfidentialClient(), SecureParContent(),
    SecureSignatureAlgorithm(), SecureSignatureAlgorithmSignedJwt(), SecureRequestObject(), RejectImplicitGrant(),
    SecureClientAuthenticationAssertion(),
)}
