"""The transmitter's HTTP endpoints, at Keycloak's paths: ``.well-known/ssf-configuration`` (also
in the RFC 8615 form), and under ``ssf/transmitter/``: ``streams``, ``streams/status``,
``verify``, ``subjects:add``, ``subjects:remove`` and ``poll/<stream id>``.

All of them answer 404 while the realm's ``ssf.transmitterEnabled`` is off, as Keycloak's. The
receiver is the client of the bearer token (a valid, unrevoked access token of this realm whose
client has ``ssf.enabled``); reads need the scope ``ssf.read``, changes ``ssf.manage``, and a
missing token or scope is 401, as Keycloak answers."""
import json

from django.http import Http404, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods

from realms.http.web import realm_url

from .. import tokens
from ..errors import NO_STORE
from ..realm_cache import get_realm
from ..services import live_subject
from . import events, streams
from .models import SsfStream
from .streams import SsfRefused

READ, MANAGE = "ssf.read", "ssf.manage"


def _answer(body=None, status=200):
    response = HttpResponse(status=status) if body is None else JsonResponse(body, status=status, safe=False)
    for name, value in NO_STORE.items():
        response[name] = value
    return response


def _refusal(exc):
    response = _answer({"error": exc.error, "error_description": exc.description} if exc.error else None, exc.status)
    if exc.status == 401:
        response["WWW-Authenticate"] = "Bearer"
    return response


def _transmitter(request, realm_name):
    """(RealmConfig, issuer); 404 for an unknown realm or one that is no transmitter."""
    realm_config = get_realm(realm_name)
    if not events.transmitter_enabled(realm_config.realm):
        raise Http404("SSF transmitter not enabled")
    return realm_config, realm_url(request, realm_name)


def _receiver(request, realm_config, issuer, scope):
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header[:7].lower() != "bearer " or not header[7:].strip():
        raise SsfRefused(401)
    try:
        claims = tokens.decode(realm_config.realm, header[7:].strip(), issuer)
    except tokens.TokenError:
        raise SsfRefused(401) from None
    live = live_subject(realm_config, claims, check_revoked=True) if claims.get("typ") == tokens.TYP_BEARER else None
    if live is None:
        raise SsfRefused(401)
    if scope not in str(claims.get("scope", "")).split():
        raise SsfRefused(401)
    client = live[2].client
    if not events.receiver_enabled(client):
        raise SsfRefused(403, "access_denied", "The client is not an SSF receiver")
    return client


def _body(request):
    try:
        return json.loads(request.body or b"null")
    except (ValueError, UnicodeDecodeError):
        raise SsfRefused(400, "invalid_request", "The body is not JSON") from None


def endpoint(scopes):
    """A transmitter endpoint: ``view(request, client, issuer, ...)`` with the receiver found for
    the scope its method needs (``scopes``: HTTP method -> scope)."""
    def wrap(view):
        @csrf_exempt
        @require_http_methods(list(scopes))
        def run(request, realm, **kwargs):
            realm_config, issuer = _transmitter(request, realm)
            try:
                client = _receiver(request, realm_config, issuer, scopes[request.method])
                return view(request, client, issuer, **kwargs)
            except SsfRefused as exc:
                return _refusal(exc)
        return run
    return wrap


@require_GET
def configuration(request, realm):
    """SSF 1.0 §7.1, at the realm's ``.well-known/ssf-configuration`` and in the RFC 8615 form."""
    realm_config, issuer = _transmitter(request, realm)
    base = streams.base(issuer)
    return JsonResponse({
        "spec_version": "1_0",
        "issuer": issuer,
        "jwks_uri": issuer + "/protocol/openid-connect/certs",
        "delivery_methods_supported": list(streams.METHODS),
        "configuration_endpoint": base + "/streams",
        "status_endpoint": base + "/streams/status",
        "add_subject_endpoint": base + "/subjects:add",
        "remove_subject_endpoint": base + "/subjects:remove",
        "verification_endpoint": base + "/verify",
        "authorization_schemes": [{"spec_urn": "urn:ietf:rfc:6749"}],
        "default_subjects": events.default_subjects(realm_config.realm),
    })


@endpoint({"GET": READ, "POST": MANAGE, "PATCH": MANAGE, "PUT": MANAGE, "DELETE": MANAGE})
def stream_config(request, client, issuer):
    if request.method == "GET":
        wanted = request.GET.get("stream_id")
        if wanted is not None:
            return _answer(streams.representation(streams.own_stream(client, wanted)))
        found = SsfStream.objects.filter(client=client).select_related("client").first()
        return _answer([streams.representation(found)] if found else [])
    if request.method == "POST":
        return _answer(streams.representation(streams.create(client, issuer, _body(request))), 201)
    if request.method == "DELETE":
        streams.delete(streams.own_stream(client, request.GET.get("stream_id"), implied=True))
        return _answer(status=204)
    return _answer(streams.representation(streams.update(client, _body(request), replace=request.method == "PUT")))


@endpoint({"GET": READ, "POST": MANAGE})
def stream_status(request, client, issuer):
    if request.method == "GET":
        if not request.GET.get("stream_id"):
            raise SsfRefused(400, "stream_error", "Stream ID is required")
        return _answer(streams.status_of(streams.own_stream(client, request.GET["stream_id"])))
    return _answer(streams.status_of(streams.set_status(client, _body(request))))


@endpoint({"POST": MANAGE})
def verify(request, client, issuer):
    streams.verify(client, _body(request))
    return _answer(status=204)


@endpoint({"POST": MANAGE})
def add_subject(request, client, issuer):
    streams.change_subjects(client, _body(request), included=True)
    return _answer(status=200)


@endpoint({"POST": MANAGE})
def remove_subject(request, client, issuer):
    streams.change_subjects(client, _body(request), included=False)
    return _answer(status=204)


@endpoint({"POST": READ})
def poll(request, client, issuer, stream_id):
    return _answer(streams.poll(streams.own_stream(client, stream_id), _body(request)))
