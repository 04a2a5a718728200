"""Keycloak's error bodies on the Admin REST API, from one DRF exception handler.

Keycloak answers a JAX-RS exception with ``{"error": <message>}`` (``"HTTP 401 Unauthorized"``,
``"HTTP 403 Forbidden"``, ``"Realm not found."``), a validation or conflict error with
``{"errorMessage": ...}`` (its ErrorRepresentation), a body it cannot read with
``{"error": "unknown_error", "error_description": "Cannot parse the JSON"}`` and anything
unexpected with a 500 that tells nothing of the cause. An error of ``realms`` that escapes a view
(``realms.errors.RealmsError``: a directory refusing a write as the user is saved, a store that
cannot be reached) is a refused request, answered 400 ``{"errorMessage": ...}`` with Keycloak's
message, never a 500. The Account REST API answers through this handler too."""
import logging

from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response

from ..errors import RealmsError, StoreRefused
from ..users.storage import Unavailable

logger = logging.getLogger("idp.api")

UNAUTHORIZED = "HTTP 401 Unauthorized"
FORBIDDEN = "HTTP 403 Forbidden"
NO_ROUTE = "Unable to find matching target resource method"
CANNOT_PARSE = "Cannot parse the JSON"


class NotFound(exceptions.NotFound):
    """404 ``{"error": message}``, e.g. ``NotFound("Realm not found.")``."""


class Invalid(exceptions.APIException):
    """400 ``{"errorMessage": message}``: the request is readable but its content is not valid."""

    status_code = status.HTTP_400_BAD_REQUEST


class BadRequest(exceptions.APIException):
    """400 ``{"error": code, "error_description": message}``: Keycloak's ErrorResponseException, e.g.
    a password the realm's policy refuses at reset-password (code = the policy's message key);
    without a message ``{"error": code}``, its BadRequestException."""

    status_code = status.HTTP_400_BAD_REQUEST

    def __init__(self, code, message=None):
        super().__init__(message or code)
        self.code, self.description = code, message


class Conflict(Invalid):
    """409 ``{"errorMessage": message}``, e.g. ``Conflict("User exists with same username")``."""

    status_code = status.HTTP_409_CONFLICT


def _body(exc):
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        return {"error": UNAUTHORIZED}
    if isinstance(exc, exceptions.PermissionDenied):
        return {"error": FORBIDDEN}
    if isinstance(exc, exceptions.ParseError | exceptions.UnsupportedMediaType):
        return {"error": "unknown_error", "error_description": CANNOT_PARSE}
    if isinstance(exc, BadRequest):
        return {"error": exc.code, **({"error_description": exc.description} if exc.description else {})}
    if isinstance(exc, Invalid):
        return {"errorMessage": str(exc.detail)}
    if isinstance(exc, exceptions.MethodNotAllowed):
        return {"error": "HTTP 405 Method Not Allowed"}
    if isinstance(exc, NotFound):
        return {"error": str(exc.detail)}
    if isinstance(exc, exceptions.NotFound):
        return {"error": "HTTP 404 Not Found"}
    if isinstance(exc, exceptions.ValidationError):
        detail = exc.detail
        while isinstance(detail, (list, dict)) and detail:
            detail = next(iter(detail.values())) if isinstance(detail, dict) else detail[0]
        return {"errorMessage": str(detail)}
    return {"error": str(exc.detail)}


def _refusal(exc):
    """A realms error as Keycloak's ErrorRepresentation: a store's refusal in Keycloak's words
    (the store's own go to the log, as Keycloak logs them), else the error's message."""
    if isinstance(exc, StoreRefused):
        logger.info("a user's store refused a change: %s", exc.detail)
        return Invalid(exc.message)
    if isinstance(exc, Unavailable):
        return Invalid("Could not reach the user's directory")
    return Invalid(str(exc))


def exception_handler(exc, context):
    """DRF's EXCEPTION_HANDLER for every API resource (set on ``RealmResource``)."""
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    if isinstance(exc, RealmsError):
        exc = _refusal(exc)
    if not isinstance(exc, exceptions.APIException):
        logger.exception("Admin API error at %s", context["request"].path)
        return Response({"error": "unknown_error", "error_description": "For more on this error consult the server log."},
                        status=500)
    response = Response(_body(exc), status=exc.status_code)
    if isinstance(exc, exceptions.Throttled) and exc.wait:
        response["Retry-After"] = str(int(exc.wait))
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        response.status_code = 401  # DRF turns a 401 without an authenticate header into 403
        response["WWW-Authenticate"] = "Bearer"
    return response
