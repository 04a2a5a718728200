"""Admin REST API for webhook endpoints, below /admin/realms/<realm>/webhooks (Keycloak style,
camelCase JSON), on the API's one base (``realms.admin_api``): bearer token, realm, roles (reading needs
``view-events``, changing ``manage-events``, as Keycloak's event configuration does), JSON body
and error shape come from there. Each view parses, calls one service function and renders."""
from datetime import datetime

from django.utils.dateparse import parse_datetime
from rest_framework.response import Response

from realms.admin_api.errors import Invalid, NotFound
from realms.admin_api.views import RealmResource

from . import catalogue, payloads, schemas, services
from .models import DeliveryAttempt, Endpoint
from .services import WebhookError, representation

READ, WRITE = "view-events", "manage-events"


class WebhookResource(RealmResource):
    def handle_exception(self, exc):
        if isinstance(exc, WebhookError):
            exc = Invalid(str(exc))
        return super().handle_exception(exc)

    def body(self):
        if not isinstance(self.request.data, dict):
            raise WebhookError("the body is a JSON object")
        return self.request.data

    def endpoint(self, endpoint_id):
        endpoint = Endpoint.objects.filter(realm=self.realm, pk=endpoint_id).prefetch_related("secrets").first()
        if endpoint is None:
            raise NotFound("Webhook not found.")
        return endpoint


def _rep(endpoint):
    """The endpoint's representation, with ``managedBy`` naming the app that manages it, if any."""
    owner = payloads.owner_of(endpoint)
    return {**representation(endpoint), **({"managedBy": owner[0]} if owner else {})}


def _changes(endpoint, body):
    """A PUT's changes (model field names). An endpoint another app manages (a Shared Signals
    stream's) changes only ``enabled`` here (switched back on after failures); the rest would
    break what it carries without a word, so it may only be sent back unchanged."""
    fields = _fields(body)
    owner = payloads.owner_of(endpoint)
    if owner is None:
        return fields
    current = representation(endpoint)
    changed = sorted(k for k in set(body) & set(services.FIELDS) if k != "enabled" and body[k] != current.get(k))
    if changed:
        raise WebhookError(f"This webhook belongs to {owner[0]}: only enabled can be changed here, not {changed[0]}")
    return {k: v for k, v in fields.items() if k == "enabled"}


def _refuse_managed_deletion(endpoint):
    owner = payloads.owner_of(endpoint)
    if owner is not None:
        raise WebhookError(f"This webhook belongs to {owner[0]}: it cannot be deleted here")


def _fields(body):
    # The representation's read-only keys are ignored, so what a GET gave can be PUT back.
    unknown = set(body) - set(services.FIELDS) - {"secret", "signature", "id", "createdAt", "handshakeAt",
                                                  "publicKeys", "disabledReason", "managedBy"}
    if unknown:
        raise WebhookError(f"unknown field {sorted(unknown)[0]!r}")
    return {services.FIELDS[k]: v for k, v in body.items() if k in services.FIELDS}


class Endpoints(WebhookResource):
    required_role = {"GET": READ, "POST": WRITE}

    def get(self, request, **kwargs):
        rows = Endpoint.objects.filter(realm=self.realm).prefetch_related("secrets")
        return Response([_rep(e) for e in rows])

    def post(self, request, **kwargs):
        body = self.body()
        fields = _fields(body)
        if "url" not in fields:
            raise WebhookError("url is required")
        endpoint, secret = services.create_endpoint(
            self.realm, fields.pop("url"), fields.pop("event_types", []), secret=body.get("secret"),
            signature=body.get("signature", "v1"), who=self.auth_details(), **fields)
        out = _rep(self.endpoint(endpoint.pk))
        out["publicKey" if body.get("signature") == "v1a" else "secret"] = secret
        return Response(out, status=201, headers={"Location": request.build_absolute_uri(f"{request.path}/{endpoint.pk}")})


class EndpointDetail(WebhookResource):
    required_role = {"GET": READ, "PUT": WRITE, "DELETE": WRITE}

    def get(self, request, endpoint_id, **kwargs):
        return Response(_rep(self.endpoint(endpoint_id)))

    def put(self, request, endpoint_id, **kwargs):
        endpoint = self.endpoint(endpoint_id)
        services.update_endpoint(endpoint, who=self.auth_details(), **_changes(endpoint, self.body()))
        return Response(status=204)

    def delete(self, request, endpoint_id, **kwargs):
        endpoint = self.endpoint(endpoint_id)
        _refuse_managed_deletion(endpoint)
        services.delete_endpoint(endpoint, who=self.auth_details())
        return Response(status=204)


class RotateSecret(WebhookResource):
    required_role = {"POST": WRITE}

    def post(self, request, endpoint_id, **kwargs):
        body = self.body()
        secret = services.rotate_secret(self.endpoint(endpoint_id),
                                        overlap_seconds=body.get("overlapSeconds", services.DEFAULT_ROTATION_OVERLAP),
                                        secret=body.get("secret"), signature=body.get("signature"),
                                        who=self.auth_details())
        return Response({"publicKey" if secret.startswith("whpk_") else "secret": secret})


class TestEvent(WebhookResource):
    required_role = {"POST": WRITE}

    def post(self, request, endpoint_id, **kwargs):
        message = services.send_test_event(self.endpoint(endpoint_id))
        return Response({"eventId": message.id}, status=202)


def _int_param(request, name, default, maximum):
    try:
        value = int(request.GET.get(name, default))
    except ValueError:
        raise WebhookError(f"{name} is an integer") from None
    if value < 0:
        raise WebhookError(f"{name} is not negative")
    return min(value, maximum)


class Deliveries(WebhookResource):
    required_role = {"GET": READ}

    def get(self, request, endpoint_id, **kwargs):
        endpoint = self.endpoint(endpoint_id)
        first = _int_param(request, "first", 0, 10**9)
        count = _int_param(request, "max", 100, 1000)
        rows = DeliveryAttempt.objects.filter(endpoint=endpoint).order_by("-started_at", "-id")[first:first + count]
        return Response([{
            "eventId": a.message_id, "attempt": a.number, "time": a.started_at.isoformat().replace("+00:00", "Z"),
            "status": a.status, "success": a.success, "durationMs": a.duration_ms, "responseBody": a.response_body,
            "error": a.error,
        } for a in rows])


def _when(value, name):
    parsed = parse_datetime(value) if isinstance(value, str) else None
    if not isinstance(parsed, datetime) or parsed.tzinfo is None:
        raise WebhookError(f"{name} is an ISO 8601 date-time with a time zone")
    return parsed


class Redeliver(WebhookResource):
    required_role = {"POST": WRITE}

    def post(self, request, endpoint_id, **kwargs):
        endpoint, body = self.endpoint(endpoint_id), self.body()
        if "eventId" in body:
            count = services.redeliver_event(endpoint, str(body["eventId"]))
        elif "since" in body and "until" in body:
            count = services.redeliver_range(endpoint, _when(body["since"], "since"), _when(body["until"], "until"),
                                             failed_only=bool(body.get("failedOnly", False)))
        else:
            raise WebhookError("give eventId, or since and until")
        return Response({"count": count}, status=202)


class EventTypes(WebhookResource):
    """The catalogue: every event type, what each payload version carries for it, and the
    payload versions (as Svix lists event types with their schemas)."""

    required_role = {"GET": READ}

    def get(self, request, **kwargs):
        return Response({"payloadVersions": catalogue.version_catalogue(), "eventTypes": schemas.event_types()})


class EventTypeSchema(WebhookResource):
    """The JSON Schema of one event type's body: ``kind`` thin (default) or fat, ``version``
    (fat only; default the latest), ``envelope`` standard (default) or cloudevents."""

    required_role = {"GET": READ}

    def get(self, request, event_type, **kwargs):
        if event_type not in catalogue.emitted_types():
            raise NotFound("Event type not found.")
        kind, version, envelope = services.payload_settings(
            request.GET.get("kind", "thin"), request.GET.get("version"), request.GET.get("envelope", "standard"))
        return Response(schemas.body_schema(event_type, kind, version, envelope))


class AsyncApi(WebhookResource):
    required_role = {"GET": READ}

    def get(self, request, **kwargs):
        return Response(schemas.asyncapi())
