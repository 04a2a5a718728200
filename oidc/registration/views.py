"""The client registration service's HTTP face (Keycloak's ClientRegistrationService):
``/realms/{realm}/clients-registrations/{provider}`` (POST) and ``.../{provider}/{clientId}``
(GET, PUT, DELETE) for the providers ``default`` (ClientRepresentation) and ``openid-connect``
(RFC 7591 / 7592). JSON in and out, CSRF-exempt (callers carry their own token), CORS; every
answer is recorded as CLIENT_REGISTER, CLIENT_INFO, CLIENT_UPDATE, CLIENT_DELETE or its _ERROR.
With the ``client-registration`` feature off the paths do not exist (404)."""
import json

from django.http import Http404, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from realms import features
from realms.audit import events
from realms.http import cors

from ..errors import NO_STORE, OAuthError, error_response
from ..views.common import realm_context
from . import converter, pairwise, service

PROVIDERS = ("default", "openid-connect")


def _body(request):
    try:
        data = json.loads(request.body or b"null")
    except (ValueError, UnicodeDecodeError):
        data = None
    if not isinstance(data, dict):
        raise converter._invalid()
    return data


def _json(body, status=200, location=None):
    response = JsonResponse(body, status=status)
    for name, value in NO_STORE.items():
        response[name] = value
    if location:
        response["Location"] = location
    return response


def _handle(ctx, provider, method, client_id):
    base = f"{ctx.issuer}/clients-registrations/{provider}"
    if method == "POST":
        body = _body(ctx.request)
        if provider == "openid-connect":
            if body.get("client_id") is not None:
                raise service._metadata_error("Client Identifier included")
            client, rep = service.create(ctx, pairwise.for_new_client(body, converter.to_internal(body)),
                                         authenticator_given="token_endpoint_auth_method" in body)
            out = converter.to_external(rep, f"{base}/{client.client_id}", rep.get("registrationAccessToken"))
            out = pairwise.describe(client, out)
            out["client_id_issued_at"] = int(client.created.timestamp())
        else:
            client, out = service.create(ctx, body)
        return client.client_id, _json(out, 201, f"{base}/{client.client_id}")
    if method == "GET":
        client, rep = service.read(ctx, client_id)
        if provider == "openid-connect":
            rep = pairwise.describe(client, converter.to_external(rep, f"{base}/{client_id}",
                                                                  rep.get("registrationAccessToken")))
        return client_id, _json(rep)
    if method == "PUT":
        body = _body(ctx.request)
        rep = converter.to_internal(body) if provider == "openid-connect" else body
        if provider == "openid-connect":
            pairwise.check_update(body, rep)
        client, rep = service.update(ctx, client_id, rep)
        if provider == "openid-connect":
            pairwise.apply_update(client, body)
            rep = pairwise.describe(client, converter.to_external(rep, f"{base}/{client_id}",
                                                                  rep.get("registrationAccessToken")))
        return client_id, _json(rep)
    service.delete(ctx, client_id)
    return client_id, HttpResponse(status=204)


def _emit(ctx, method, client_id, exc=None):
    """The answer's event: CLIENT_REGISTER, CLIENT_INFO, CLIENT_UPDATE or CLIENT_DELETE, or its
    _ERROR (literal names, which the event-name test reads)."""
    if method == "POST":
        name = "CLIENT_REGISTER"
        failed = "CLIENT_REGISTER_ERROR"
    elif method == "GET":
        name = "CLIENT_INFO"
        failed = "CLIENT_INFO_ERROR"
    elif method == "PUT":
        name = "CLIENT_UPDATE"
        failed = "CLIENT_UPDATE_ERROR"
    else:
        name = "CLIENT_DELETE"
        failed = "CLIENT_DELETE_ERROR"
    common = {"client_id": client_id or "", "ip_address": ctx.ip_address}
    if exc is None:
        events.emit(ctx.realm, name, details=ctx.details, **common)
        return
    details = {**ctx.details, "reason": exc.description} if exc.description else ctx.details
    events.emit(ctx.realm, failed, error=exc.event_error, details=details, **common)


@csrf_exempt
def registrations(request, realm, provider, client_id=None):
    if not features.enabled("client-registration") or provider not in PROVIDERS:
        raise Http404
    methods = ["POST", "OPTIONS"] if client_id is None else ["GET", "PUT", "DELETE", "OPTIONS"]
    if request.method == "OPTIONS":
        return cors.preflight(request, HttpResponse(), methods)
    if request.method not in methods:
        response = HttpResponse(status=405)
        response["Allow"] = ", ".join(methods)
        return response
    realm_config, issuer = realm_context(request, realm)
    ctx = service.Context(request=request, realm_config=realm_config, issuer=issuer, endpoint=provider)
    try:
        client_id, response = _handle(ctx, provider, request.method, client_id)
    except OAuthError as exc:
        _emit(ctx, request.method, client_id, exc)
        return cors.add(request, error_response(exc), None)
    _emit(ctx, request.method, client_id)
    return cors.add(request, response, None)
