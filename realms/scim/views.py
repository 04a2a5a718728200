"""The SCIM 2.0 endpoint below ``/realms/<realm>/scim/v2/`` (RFC 7644), as Keycloak serves it:
404 unless the realm's ``scimApiEnabled`` is on; a bearer token of that realm (the Admin API's
verifier) from a confidential client, with the endpoint's URL in its audience; reads need
``view-users``, writes ``manage-users`` (realm-management roles)."""
from rest_framework import status
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from ..admin_api.authentication import BearerAuthentication
from ..admin_api.parsers import JSONParser
from ..audit.admin_events import auth_details
from ..data.realm_cache import find_realm
from ..http.web import realm_url
from . import filters, patch, schemas
from .errors import ScimError, exception_handler
from .resources import RESOURCES

SCIM_JSON = "application/scim+json"
DEFAULT_COUNT = 100


class ScimRenderer(JSONRenderer):
    media_type = SCIM_JSON


class ScimParser(JSONParser):
    media_type = SCIM_JSON


class ScimOnly(BaseContentNegotiation):
    def select_parser(self, request, parsers):
        content_type = request.content_type.split(";")[0].strip().lower()
        return next((p for p in parsers if p.media_type == content_type), parsers[0])

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class ScimView(APIView):
    post_reads = False  # a POST that only reads (a search) needs view-users, not manage-users
    authentication_classes = (BearerAuthentication,)
    permission_classes = ()
    parser_classes = (ScimParser, JSONParser)
    renderer_classes = (ScimRenderer,)
    content_negotiation_class = ScimOnly

    def get_exception_handler(self):
        return exception_handler

    def initial(self, request, *args, **kwargs):
        config = find_realm(kwargs["realm"])
        if config is None or not config.realm.scim_api_enabled:  # off (the default), or no such realm
            raise ScimError(404, "Not found")
        self.realm = config.realm
        super().initial(request, *args, **kwargs)
        caller = request.user
        self.base = realm_url(request, self.realm.name) + "/scim/v2"
        audience = caller.claims.get("aud")
        audience = [audience] if isinstance(audience, str) else (audience or [])
        if caller.realm.pk != self.realm.pk or self.base not in audience:
            raise ScimError(401, "Bearer token required")  # another realm's token, or not meant for SCIM
        client = config.client(caller.client_id)
        if client is None or client.public_client:
            raise ScimError(403, "Public client not allowed")
        needed = "view-users" if request.method in ("GET", "HEAD") else "manage-users"
        if request.method == "POST" and (kwargs.get("search") or self.post_reads):
            needed = "view-users"
        if not caller.may(needed, self.realm):
            raise ScimError(403, "Forbidden")

    def auth(self):
        return auth_details(self.request, self.request.user.user, self.request.user.client_id)


class ServiceProviderConfig(ScimView):
    def get(self, request, realm):
        return Response(schemas.service_provider_config(self.base))


def _list(resources, start_index=1):
    return {"schemas": [schemas.LIST_RESPONSE], "totalResults": len(resources), "startIndex": start_index,
            "itemsPerPage": len(resources), "Resources": resources}


def _user_attributes(realm):
    """The User schema of this realm: ``userName`` is immutable where usernames cannot be edited."""
    return [({**a, "mutability": "immutable"} if a["name"] == "userName" and not realm.edit_username_allowed else a)
            for a in schemas.USER_ATTRIBUTES]


def _schema(urn, realm, base):
    doc = schemas.schema_doc(urn, base)
    if urn == schemas.USER:
        doc["attributes"] = _user_attributes(realm)
    return doc


class Schemas(ScimView):
    def get(self, request, realm, urn=None):
        if urn is None:
            return Response(_list([_schema(u, self.realm, self.base) for u in schemas.SCHEMAS]))
        if urn not in schemas.SCHEMAS:
            raise ScimError(404, f"Schema {urn} not found")
        return Response(_schema(urn, self.realm, self.base))


class ResourceTypes(ScimView):
    def get(self, request, realm, name=None):
        if name is None:
            return Response(_list([schemas.resource_type_doc(n, self.base) for n in schemas.RESOURCE_TYPES]))
        if name not in schemas.RESOURCE_TYPES:
            raise ScimError(404, f"Resource type {name} not found")
        return Response(schemas.resource_type_doc(name, self.base))


def _names(value):
    if value is None:
        return []
    if isinstance(value, str):
        value = value.split(",")
    return [filters.attribute_name(v.strip()) for v in value if isinstance(v, str) and v.strip()]


def project(doc, attributes, excluded):
    """``attributes`` / ``excludedAttributes`` (RFC 7644 §3.9); ``id`` and ``schemas`` always stay."""
    always = {"id", "schemas"}
    if attributes:
        wanted = {}
        for name in attributes:
            top, _, sub = name.partition(".")
            wanted.setdefault(top, set())
            if sub:
                wanted[top].add(sub)
        out = {}
        for key, value in doc.items():
            subs = wanted.get(key.lower())
            if key.lower() in always:
                out[key] = value
            elif subs is not None:
                out[key] = {k: v for k, v in value.items() if k.lower() in subs} if subs and isinstance(
                    value, dict) else value
        return out
    if excluded:
        return {k: v for k, v in doc.items() if k.lower() in always or k.lower() not in set(excluded)}
    return doc


def find(view, kinds, params):
    """One page of the resources of ``kinds`` matching ``params`` (``filter``, ``sortBy``,
    ``sortOrder``, ``startIndex``, ``count``, ``attributes``, ``excludedAttributes``): each kind's
    matches in turn, so ``POST /.search`` pages through users, then groups."""
    try:
        node = filters.parse(params["filter"]) if params.get("filter") else None
    except filters.FilterError as exc:
        raise ScimError(400, str(exc), "invalidFilter") from None
    querysets = []
    for kind in kinds:
        queryset = kind.queryset(view.realm)
        if node is not None:
            try:
                queryset = queryset.filter(filters.to_q(node, kind.fields)).distinct()
            except filters.FilterError as exc:
                if len(kinds) == 1:
                    raise ScimError(400, str(exc), "invalidFilter") from None
                continue  # an attribute this kind does not have: none of its resources match
        order = list(kind.default_order)
        if params.get("sortBy"):
            field = kind.fields.get(filters.attribute_name(params["sortBy"]))
            if field is None and len(kinds) == 1:
                raise ScimError(400, f"Sorting by {params['sortBy']} is not supported", "invalidValue")
            if field is not None:
                descending = str(params.get("sortOrder") or "ascending").lower() == "descending"
                order = [("-" if descending else "") + field.lookup, "pk"]
        querysets.append((kind, queryset.order_by(*order)))
    if not querysets:
        raise ScimError(400, "No resource type has the attributes of the filter", "invalidFilter")
    try:
        start = max(int(params.get("startIndex") or 1), 1)
        count = params.get("count")
        count = DEFAULT_COUNT if count in (None, "") else max(min(int(count), schemas.MAX_RESULTS), 0)
    except (TypeError, ValueError):
        raise ScimError(400, "startIndex and count are integers", "invalidValue") from None
    attributes, excluded = _names(params.get("attributes")), _names(params.get("excludedAttributes"))
    total, skip, docs = 0, start - 1, []
    for kind, queryset in querysets:
        size = kind.count_all(view.realm) if node is None and kind.count_all else queryset.count()
        total += size
        if skip >= size:
            skip -= size
            continue
        room = count - len(docs)
        if room > 0:
            docs += [project(kind.to_scim(o, view.base), attributes, excluded) for o in queryset[skip:skip + room]]
        skip = 0
    return Response({"schemas": [schemas.LIST_RESPONSE], "totalResults": total, "startIndex": start,
                     "itemsPerPage": len(docs), "Resources": docs})


def _search_body(request):
    body = request.data if isinstance(request.data, dict) else {}
    if schemas.SEARCH_REQUEST not in (body.get("schemas") or []):
        raise ScimError(400, f"A search request has the schema {schemas.SEARCH_REQUEST}", "invalidSyntax")
    return body


class RootSearch(ScimView):
    """``POST /.search``: every resource type at once (RFC 7644 §3.4.3)."""

    post_reads = True

    def post(self, request, realm):
        return find(self, list(RESOURCES.values()), _search_body(request))


class Collection(ScimView):
    """``/Users`` and ``/Groups``: GET (filter, sort, page), POST (create), ``.search``."""

    def kind(self):
        return RESOURCES[self.kwargs["endpoint"]]

    def get(self, request, realm, endpoint, search=False):
        if search:
            raise ScimError(405, "Method GET not allowed")
        return find(self, [self.kind()], request.query_params)

    def post(self, request, realm, endpoint, search=False):
        if search:
            return find(self, [self.kind()], _search_body(request))
        body = request.data if isinstance(request.data, dict) else None
        if body is None:
            raise ScimError(400, "Expected a JSON object", "invalidSyntax")
        kind = self.kind()
        if kind.schema not in (body.get("schemas") or []):
            raise ScimError(400, f"The resource's schemas must include {kind.schema}", "invalidSyntax")
        obj = kind.write(self.realm, None, body, self.auth())
        doc = kind.to_scim(kind.queryset(self.realm).get(pk=obj.pk), self.base)
        return Response(doc, status=status.HTTP_201_CREATED,
                        headers={"Location": doc["meta"]["location"], "ETag": doc["meta"]["version"]})


def _etag_matches(header, current):
    tags = [t.strip() for t in header.split(",")]
    return "*" in tags or current in tags or current.removeprefix("W/") in tags


class Item(ScimView):
    """``/Users/{id}`` and ``/Groups/{id}``: GET, PUT, PATCH, DELETE, with ETags (If-Match,
    If-None-Match)."""

    def load(self):
        kind = RESOURCES[self.kwargs["endpoint"]]
        obj = kind.queryset(self.realm).filter(pk=self.kwargs["id"]).first()
        if obj is None:
            raise ScimError(404, f"Resource {self.kwargs['id']} not found")
        return kind, obj, kind.to_scim(obj, self.base)

    def precondition(self, doc):
        header = self.request.META.get("HTTP_IF_MATCH")
        if header and not _etag_matches(header, doc["meta"]["version"]):
            raise ScimError(412, "The resource has changed (If-Match does not match its version)")

    def answer(self, kind, obj_pk):
        """The resource as it is now (after a change)."""
        return self.respond(kind.to_scim(kind.queryset(self.realm).get(pk=obj_pk), self.base))

    def respond(self, doc):
        params = self.request.query_params
        body = project(doc, _names(params.get("attributes")), _names(params.get("excludedAttributes")))
        return Response(body, headers={"ETag": doc["meta"]["version"], "Location": doc["meta"]["location"]})

    def get(self, request, realm, endpoint, id):
        _, _, doc = self.load()
        none_match = request.META.get("HTTP_IF_NONE_MATCH")
        if none_match and _etag_matches(none_match, doc["meta"]["version"]):
            return Response(status=status.HTTP_304_NOT_MODIFIED, headers={"ETag": doc["meta"]["version"]})
        return self.respond(doc)  # as loaded: nothing changed it

    def put(self, request, realm, endpoint, id):
        kind, obj, doc = self.load()
        self.precondition(doc)
        body = request.data if isinstance(request.data, dict) else None
        if body is None or kind.schema not in (body.get("schemas") or []):
            raise ScimError(400, f"The resource's schemas must include {kind.schema}", "invalidSyntax")
        if body.get("id") not in (None, str(obj.pk)):
            raise ScimError(400, "Invalid reference to resource", "invalidSyntax")
        kind.write(self.realm, obj, body, self.auth())
        return self.answer(kind, obj.pk)

    def patch(self, request, realm, endpoint, id):
        kind, obj, doc = self.load()
        self.precondition(doc)
        body = request.data if isinstance(request.data, dict) else {}
        if schemas.PATCH_OP not in (body.get("schemas") or []):
            raise ScimError(400, "No PATCH op schema provided in request", "invalidSyntax")
        current = {k: v for k, v in doc.items() if k not in ("meta", "groups")}  # groups: read-only
        kind.write(self.realm, obj, patch.apply(current, body.get("Operations"), kind.attributes), self.auth())
        return self.answer(kind, obj.pk)

    def delete(self, request, realm, endpoint, id):
        kind, obj, doc = self.load()
        self.precondition(doc)
        kind.delete(self.realm, obj, self.auth())
        return Response(status=status.HTTP_204_NO_CONTENT)


class NoRoute(ScimView):
    def get(self, request, *args, **kwargs):
        raise ScimError(404, "Resource type not found")

    post = put = patch = delete = get
