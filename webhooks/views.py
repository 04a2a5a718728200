"""Admin REST API for webhook endpoints, below /admin/realms/<realm>/webhooks (Keycloak style,
camelCase JSON). Each view parses, calls one service function and renders; errors become
responses in ``admin_api`` only."""
import functools
import json
from datetime import datetime

from django.http import HttpResponse, JsonResponse
from django.utils.dateparse import parse_datetime
from django.views.decorators.csrf import csrf_exempt

from oidc.errors import OAuthError, error_response
from realms.models import Realm

from . import services
from .auth import ADMIN_REALM, admin_claims
from .models import DeliveryAttempt, Endpoint, EndpointSecret
from .services import WebhookError


class NotFound(Exception):
    pass


def _error(status, error, description):
    return JsonResponse({"error": error, "error_description": description}, status=status)


def admin_api(methods):
    """Bearer check, realm lookup, JSON body, and the mapping of errors to responses."""

    def decorate(view):
        @csrf_exempt  # bearer-token API: no cookies, so no cross-site request forgery
        @functools.wraps(view)
        def wrapper(request, realm, **kwargs):
            if request.method not in methods:
                return _error(405, "invalid_request", f"{request.method} not allowed")
            try:
                request.webhook_admin = admin_claims(request)
                realm_obj = Realm.objects.filter(name=realm).first()
                if realm_obj is None:
                    raise NotFound("Realm not found.")
                body = {}
                if request.method in ("POST", "PUT") and request.body:
                    body = json.loads(request.body)
                    if not isinstance(body, dict):
                        raise WebhookError("the body is a JSON object")
                return view(request, realm_obj, body, **kwargs)
            except OAuthError as exc:
                return error_response(exc)
            except NotFound as exc:
                return _error(404, "not_found", str(exc))
            except (WebhookError, ValueError) as exc:
                return _error(400, "invalid_request", str(exc) if isinstance(exc, WebhookError) else "invalid JSON")

        return wrapper

    return decorate


def _who(request):
    """The admin behind a REST call, for the admin events of its changes."""
    master = Realm.objects.filter(name=ADMIN_REALM).values_list("pk", flat=True).first()
    return services.actor(request.webhook_admin.get("sub", ""), request.META.get("REMOTE_ADDR", ""), master)


def _endpoint(realm, endpoint_id):
    endpoint = Endpoint.objects.filter(realm=realm, pk=endpoint_id).prefetch_related("secrets").first()
    if endpoint is None:
        raise NotFound("Webhook not found.")
    return endpoint


def representation(endpoint):
    active = endpoint.active_secrets()
    return {
        "id": endpoint.pk,
        "url": endpoint.url,
        "eventTypes": endpoint.event_types,
        "enabled": endpoint.enabled,
        "description": endpoint.description,
        "createdAt": endpoint.created_at.isoformat().replace("+00:00", "Z"),
        "rateLimit": endpoint.rate_limit,
        "maxConcurrency": endpoint.max_concurrency,
        "signature": "v1a" if any(s.kind == EndpointSecret.ED25519 for s in active) else "v1",
        "publicKeys": [s.public_key for s in active if s.kind == EndpointSecret.ED25519],
        "disabledReason": endpoint.disabled_reason,
        "ownershipHandshake": endpoint.ownership_handshake,
        "handshakeAt": endpoint.handshake_at.isoformat().replace("+00:00", "Z") if endpoint.handshake_at else None,
    }


def _fields(body):
    unknown = set(body) - set(services.FIELDS) - {"secret", "signature", "id", "createdAt", "handshakeAt"}
    if unknown:
        raise WebhookError(f"unknown field {sorted(unknown)[0]!r}")
    return {services.FIELDS[k]: v for k, v in body.items() if k in services.FIELDS}


@admin_api(("GET", "POST"))
def endpoints(request, realm, body):
    if request.method == "GET":
        rows = Endpoint.objects.filter(realm=realm).prefetch_related("secrets")
        return JsonResponse([representation(e) for e in rows], safe=False)
    fields = _fields(body)
    if "url" not in fields:
        raise WebhookError("url is required")
    endpoint, secret = services.create_endpoint(
        realm, fields.pop("url"), fields.pop("event_types", []), secret=body.get("secret"),
        signature=body.get("signature", "v1"), who=_who(request), **fields)
    out = representation(_endpoint(realm, endpoint.pk))
    out["publicKey" if body.get("signature") == "v1a" else "secret"] = secret
    response = JsonResponse(out, status=201)
    response["Location"] = request.build_absolute_uri(f"{request.path}/{endpoint.pk}")
    return response


@admin_api(("GET", "PUT", "DELETE"))
def endpoint(request, realm, body, endpoint_id):
    endpoint = _endpoint(realm, endpoint_id)
    if request.method == "GET":
        return JsonResponse(representation(endpoint))
    if request.method == "DELETE":
        services.delete_endpoint(endpoint, who=_who(request))
    else:
        services.update_endpoint(endpoint, who=_who(request), **_fields(body))
    return HttpResponse(status=204)


@admin_api(("POST",))
def rotate_secret(request, realm, body, endpoint_id):
    secret = services.rotate_secret(_endpoint(realm, endpoint_id),
                                    overlap_seconds=body.get("overlapSeconds", services.DEFAULT_ROTATION_OVERLAP),
                                    secret=body.get("secret"), signature=body.get("signature"), who=_who(request))
    return JsonResponse({"publicKey" if secret.startswith("whpk_") else "secret": secret})


@admin_api(("POST",))
def test_event(request, realm, body, endpoint_id):
    message = services.send_test_event(_endpoint(realm, endpoint_id))
    return JsonResponse({"eventId": message.id}, status=202)


def _int_param(request, name, default, maximum):
    try:
        value = int(request.GET.get(name, default))
    except ValueError:
        raise WebhookError(f"{name} is an integer") from None
    if value < 0:
        raise WebhookError(f"{name} is not negative")
    return min(value, maximum)


@admin_api(("GET",))
def deliveries(request, realm, body, endpoint_id):
    endpoint = _endpoint(realm, endpoint_id)
    first = _int_param(request, "first", 0, 10**9)
    count = _int_param(request, "max", 100, 1000)
    rows = DeliveryAttempt.objects.filter(endpoint=endpoint).order_by("-started_at", "-id")[first:first + count]
    return JsonResponse([{
        "eventId": a.message_id, "attempt": a.number, "time": a.started_at.isoformat().replace("+00:00", "Z"),
        "status": a.status, "success": a.success, "durationMs": a.duration_ms, "responseBody": a.response_body,
        "error": a.error,
    } for a in rows], safe=False)


def _when(value, name):
    parsed = parse_datetime(value) if isinstance(value, str) else None
    if not isinstance(parsed, datetime) or parsed.tzinfo is None:
        raise WebhookError(f"{name} is an ISO 8601 date-time with a time zone")
    return parsed


@admin_api(("POST",))
def redeliver(request, realm, body, endpoint_id):
    endpoint = _endpoint(realm, endpoint_id)
    if "eventId" in body:
        count = services.redeliver_event(endpoint, str(body["eventId"]))
    elif "since" in body and "until" in body:
        count = services.redeliver_range(endpoint, _when(body["since"], "since"), _when(body["until"], "until"),
                                         failed_only=bool(body.get("failedOnly", False)))
    else:
        raise WebhookError("give eventId, or since and until")
    return JsonResponse({"count": count}, status=202)
