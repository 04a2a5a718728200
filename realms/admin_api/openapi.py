"""``GET /admin/openapi.json``: an OpenAPI 3.1 document of the Admin REST API, made from the
resource registry (every app's registered routes, ``/admin/realms`` and ``/admin/serverinfo``).

Each route's path, methods, path parameters, summary (its view's docstring) and the
realm-management role it requires (``x-required-role``, from the view's ``required_role``) come
from the routes themselves, so the document cannot drift from what is served. It is open, like
the OpenAPI file Keycloak publishes: it describes routes, never data."""
import re

from rest_framework.response import Response

from . import resources
from .permissions import required_role
from .realms import Realms
from .serverinfo import KEYCLOAK_VERSION, ServerInfo
from .views import ApiView

PREFIX = "/admin/realms/"
_METHODS = ("get", "post", "put", "patch", "delete")
_PARAM = re.compile(r"<(?:\w+:)?(\w+)>")
_ERROR = {"type": "object", "description": "Keycloak's error shape",
          "properties": {"error": {"type": "string"}, "error_description": {"type": "string"},
                         "errorMessage": {"type": "string"}}}


def _operations(path, view_class, initkwargs):
    view = view_class(**initkwargs)
    doc = (view_class.__doc__ or "").strip().split("\n\n")[0]
    params = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
              for name in _PARAM.findall(path)]
    operation_id = _PARAM.sub(r"\1", path).removeprefix("/admin/").replace("/", "_").replace("-", "_")
    parts = path.split("/")
    tag = parts[4] if len(parts) > 4 else parts[2]
    ops = {}
    for method in _METHODS:
        if not hasattr(view_class, method):
            continue
        op = {
            "operationId": f"{method}_{operation_id}",
            "tags": [tag],
            "responses": {"2XX": {"description": "Success (a JSON body, or none for 201 and 204)"},
                          "4XX": {"description": "Refused", "content": {"application/json": {
                              "schema": {"$ref": "#/components/schemas/Error"}}}}},
        }
        if doc:
            op["summary"] = " ".join(doc.split())
        if params:
            op["parameters"] = params
        if method in ("post", "put", "patch"):
            media_type = view_class.parser_classes[0].media_type  # form-encoded for the invitations
            op["requestBody"] = {"required": False, "content": {media_type: {"schema": {}}}}
        if getattr(view, "required_role", None) is not None:
            op["x-required-role"] = required_role(view, method.upper())
        ops[method] = op
    return ops


def document():
    routes = [(f"{PREFIX}{p.pattern}".rstrip("/"), p.callback) for p in resources.patterns()]
    routes += [("/admin/realms", Realms.as_view()), ("/admin/serverinfo", ServerInfo.as_view())]
    paths = {}
    for route, callback in routes:
        path = _PARAM.sub(r"{\1}", route)
        paths[path] = _operations(route, callback.view_class, callback.view_initkwargs)
    return {
        "openapi": "3.1.0",
        "info": {"title": "Admin REST API", "version": KEYCLOAK_VERSION,
                 "description": "Keycloak's Admin REST API (bearer tokens; the realm-management role a "
                                "route needs is its x-required-role)."},
        "security": [{"bearer": []}],
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}},
                       "schemas": {"Error": _ERROR}},
        "paths": dict(sorted(paths.items())),
    }


class OpenApi(ApiView):
    """The document, to anyone (no token)."""

    authentication_classes = ()

    def get(self, request):
        return Response(document())
