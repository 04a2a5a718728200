"""The pushed authorization request endpoint (RFC 9126) at Keycloak's path
``/protocol/openid-connect/ext/par/request``.

The client authenticates as at the token endpoint; the pushed parameters (or the ``request``
object among them, RFC 9101) are checked as the authorization endpoint checks them, and kept for
the realm's ``parRequestUriLifespan`` (oidc.request_object). Errors are JSON (RFC 9126 §2.3), with
Keycloak's mapping: a request object or its requirement refused is ``invalid_request_object``; a
bad redirect URI, response type or scope ``invalid_request``. A DPoP proof sent with the push
(RFC 9449 §10.1) or a ``dpop_jkt`` parameter binds the code to that key; both must name the same.
"""
from realms.audit import events
from realms.http.redirects import is_valid_redirect_uri
from realms.http.web import client_address

from . import client_policies, dpop, request_object
from .authorize import UnsupportedResponseType, parse_request, registered_uris
from .client_auth import authenticate
from .errors import InvalidRequest, InvalidScope, OAuthError

# What authenticated the push is no part of the authorization request kept.
CREDENTIALS = ("client_secret", "client_assertion", "client_assertion_type")


def endpoint_url(issuer):
    return f"{issuer}/protocol/openid-connect/ext/par/request"


def push(request, realm_config, issuer, form, holder):
    """The 201 body (``request_uri``, ``expires_in``) for a valid pushed request; raises the
    OAuthError to answer. ``holder["config"]`` gets the client once it is authenticated (CORS)."""
    realm = realm_config.realm
    try:
        config, _ = authenticate(request, realm_config, form,
                                 audiences=(issuer, f"{issuer}/protocol/openid-connect/token", endpoint_url(issuer)))
        holder["config"] = config
        client = config.client
        if "request_uri" in form:
            raise InvalidRequest("It is not allowed to include request_uri to PAR.")
        token = form.get("request", "")
        request_object.check_required(client, request=token, request_uri="")
        claims = request_object.verify(realm, client, issuer, token) if token else None
        params = request_object.merged(form, claims or {})
        for name in CREDENTIALS:
            params.pop(name, None)
        params["client_id"] = client.client_id
        if "HTTP_DPOP" in request.META:
            nonce_scope = (dpop.realm_nonce_scope(realm) if client.attributes.get(dpop.REQUIRE_NONCE) == "true"
                           else None)
            jkt = dpop.proof_jkt(request, endpoint_url(issuer), nonce_scope=nonce_scope)
            if params.get("dpop_jkt", jkt) != jkt:
                raise InvalidRequest("DPoP Proof public key thumbprint does not match dpop_jkt.")
            params["dpop_jkt"] = jkt
        redirect_uri = params.get("redirect_uri", "")
        if not redirect_uri or not is_valid_redirect_uri(registered_uris(client, request), redirect_uri):
            raise InvalidRequest("Invalid parameter: redirect_uri")
        try:
            authz = parse_request(config, params, redirect_uri)
        except UnsupportedResponseType:
            raise InvalidRequest("Unsupported response type") from None
        except InvalidScope as exc:
            raise InvalidRequest(exc.description) from None
        client_policies.enforce(client_policies.PUSHED_AUTHORIZATION_REQUEST, realm_config, config,
                                request=request, params=params, authz=authz, form=form)
        request_uri, expires_in = request_object.store_pushed(realm, client, params, claims)
    except OAuthError as exc:
        config = holder.get("config")
        events.emit(realm, "PUSHED_AUTHORIZATION_REQUEST_ERROR", client_id=config.client_id if config else "",
                    ip_address=client_address(request), error=exc.event_error,
                    details={"reason": exc.description})
        raise
    events.emit(realm, "PUSHED_AUTHORIZATION_REQUEST", client_id=client.client_id,
                ip_address=client_address(request), details={"redirect_uri": redirect_uri})
    return {"request_uri": request_uri, "expires_in": expires_in}, config
