"""SCIM's error response (RFC 7644 §3.12): ``status`` as a string, a ``scimType`` where the RFC
names one, and a ``detail`` a person can act on. ``exception_handler`` is the one place that
turns what escapes a SCIM view into that body: a ScimError as raised, DRF's refusals, a user's
store refusing a change (``realms.errors.StoreRefused``: the store's own words) or unreachable,
and any other error of ``realms`` as a 400 with its message, never a 500."""
from rest_framework import exceptions
from rest_framework.response import Response

from ..errors import RealmsError, StoreRefused
from ..users.storage import Unavailable
from .schemas import ERROR


class ScimError(RealmsError):
    def __init__(self, status, detail, scim_type=None):
        super().__init__(detail)
        self.status, self.detail, self.scim_type = status, detail, scim_type

    def body(self):
        body = {"schemas": [ERROR], "status": str(self.status), "detail": self.detail}
        if self.scim_type:
            body["scimType"] = self.scim_type
        return body


def _scim_error(exc, method):
    """``exc`` as a ScimError, or None for what nobody meant to raise (DRF's 500 then)."""
    if isinstance(exc, ScimError):
        return exc
    if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
        return ScimError(401, "Bearer token required")
    if isinstance(exc, exceptions.PermissionDenied):
        return ScimError(403, str(exc.detail))
    if isinstance(exc, exceptions.ParseError):
        return ScimError(400, "The body is not valid JSON", "invalidSyntax")
    if isinstance(exc, exceptions.MethodNotAllowed):
        return ScimError(405, f"Method {method} not allowed")
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return ScimError(415, "Send application/scim+json")
    if isinstance(exc, exceptions.APIException):  # another refusal of DRF's, in SCIM's body
        return ScimError(exc.status_code, str(exc.detail))
    if isinstance(exc, StoreRefused):
        return ScimError(400, exc.detail)
    if isinstance(exc, Unavailable):
        return ScimError(503, "Could not reach the user's directory")
    if isinstance(exc, RealmsError):
        return ScimError(400, str(exc))
    return None


def exception_handler(exc, context):
    """DRF's exception handler of every SCIM view."""
    error = _scim_error(exc, context["request"].method)
    if error is None:
        return None
    response = Response(error.body(), status=error.status)
    if error.status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="scim"'
    return response
