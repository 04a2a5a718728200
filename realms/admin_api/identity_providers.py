"""``/admin/realms/{realm}/identity-provider`` (Keycloak's IdentityProvidersResource and
IdentityProviderResource): the realm's identity providers (``instances``), their mappers and the
mapper types their type offers, a provider type's description (``providers/{id}``) and
``import-config``; and a user's links to providers (``users/{id}/federated-identity``, Keycloak's
UserResource). Reading needs ``view-identity-providers``, changing ``manage-identity-providers``;
the checks, messages and admin events are ``realms.brokering.admin``'s, shared with the console."""
from django.db.models import Q
from rest_framework import status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from ..brokering import admin, mappers
from ..brokering.providers import get_provider_type
from ..http import outbound
from ..models import FederatedIdentity, IdentityProvider, IdentityProviderMapper
from ..representation import RepresentationError
from ..representation.fields import as_str
from ..representation.identity_providers import from_representation, mapper_from_representation
from . import errors
from .parsers import JSONParser
from .query import bounds, flag, location
from .views import JSONOnly, RealmResource

VIEW, MANAGE = "view-identity-providers", "manage-identity-providers"


def refused(exc):
    """``realms.brokering.admin.Refused`` as Keycloak answers it."""
    if exc.reserved:
        return errors.BadRequest(exc.message)
    return errors.Conflict(exc.message) if exc.status == 409 else errors.Invalid(exc.message)


def find(realm, alias):
    """The provider a path names, by alias or internal id (Keycloak's getByIdOrAlias); 404."""
    idp = IdentityProvider.objects.filter(realm=realm).filter(Q(alias=alias) | Q(internal_id=alias)).first()
    if idp is None:
        raise errors.NotFound("HTTP 404 Not Found")
    return idp


def _search(queryset, search):
    """Keycloak's ``search``: ``name*`` (the default) a prefix, ``*name*`` a part, ``"name"`` the
    whole alias; case-insensitive."""
    if len(search) > 1 and search.startswith('"') and search.endswith('"'):
        return queryset.filter(alias__iexact=search[1:-1])
    if search.startswith("*") and search.endswith("*") and len(search) > 1:
        return queryset.filter(alias__icontains=search.strip("*"))
    return queryset.filter(alias__istartswith=search.rstrip("*"))


class Instances(RealmResource):
    """The realm's identity providers: list (``search``, ``first``, ``max``,
    ``briefRepresentation``, ``realmOnly``) and create."""

    required_role = {"GET": VIEW, "POST": MANAGE}

    def get(self, request, realm):
        found = IdentityProvider.objects.filter(realm=self.realm).order_by("alias")
        search = request.query_params.get("search", "").strip()
        if search:
            found = _search(found, search)
        if flag(request, "realmOnly", False):
            found = found.filter(organization_links__isnull=True)
        first, most = bounds(request, 100)
        brief = flag(request, "briefRepresentation", False)
        return Response([admin.rep(idp, brief=brief) for idp in found[first:first + most]])

    def post(self, request, realm):
        try:
            idp = from_representation(self.realm, request.data)
            admin.create(self.realm, idp, auth=self.auth_details(), representation=request.data)
        except RepresentationError as exc:
            raise errors.Invalid(str(exc)) from None
        except admin.Refused as exc:
            raise refused(exc) from None
        return Response(status=status.HTTP_201_CREATED, headers={
            "Location": location(request, f"{self.realm.name}/identity-provider/instances/{idp.alias}")})


class Instance(RealmResource):
    """One identity provider, by alias or internal id: read, update, delete."""

    required_role = {"GET": VIEW, "PUT": MANAGE, "DELETE": MANAGE}

    def get(self, request, realm, alias):
        return Response(admin.rep(find(self.realm, alias)))

    def put(self, request, realm, alias):
        existing = find(self.realm, alias)
        try:
            idp = from_representation(self.realm, request.data, existing)
            admin.update(self.realm, idp, existing, auth=self.auth_details(), representation=request.data)
        except RepresentationError as exc:
            raise errors.Invalid(str(exc)) from None
        except admin.Refused as exc:
            raise refused(exc) from None
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, alias):
        admin.delete(self.realm, find(self.realm, alias), auth=self.auth_details())
        return Response(status=status.HTTP_204_NO_CONTENT)


def _mapper(idp, mapper_id):
    mapper = IdentityProviderMapper.objects.filter(identity_provider=idp, pk=mapper_id).first()
    if mapper is None:
        raise errors.NotFound("Model not found")
    return mapper


class Mappers(RealmResource):
    """An identity provider's mappers: list and create."""

    required_role = {"GET": VIEW, "POST": MANAGE}

    def get(self, request, realm, alias):
        idp = find(self.realm, alias)
        return Response([admin.mapper_rep(m) for m in idp.mappers.select_related("identity_provider")])

    def post(self, request, realm, alias):
        idp = find(self.realm, alias)
        try:
            mapper = mapper_from_representation(self.realm, request.data)
            admin.create_mapper(self.realm, idp, mapper, auth=self.auth_details())
        except RepresentationError as exc:
            raise errors.Invalid(str(exc)) from None
        except admin.Refused as exc:
            raise refused(exc) from None
        return Response(status=status.HTTP_201_CREATED, headers={"Location": location(
            request, f"{self.realm.name}/identity-provider/instances/{idp.alias}/mappers/{mapper.id}")})


class MapperDetail(RealmResource):
    """One mapper of an identity provider: read, update, delete."""

    required_role = {"GET": VIEW, "PUT": MANAGE, "DELETE": MANAGE}

    def get(self, request, realm, alias, mapper_id):
        return Response(admin.mapper_rep(_mapper(find(self.realm, alias), mapper_id)))

    def put(self, request, realm, alias, mapper_id):
        idp = find(self.realm, alias)
        existing = _mapper(idp, mapper_id)
        try:
            mapper = mapper_from_representation(self.realm, request.data)
            if not mapper.name:
                mapper.name = existing.name
            if not mapper.mapper_type:
                mapper.mapper_type = existing.mapper_type
            admin.update_mapper(self.realm, idp, mapper, existing, auth=self.auth_details())
        except RepresentationError as exc:
            raise errors.Invalid(str(exc)) from None
        except admin.Refused as exc:
            raise refused(exc) from None
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, alias, mapper_id):
        idp = find(self.realm, alias)
        admin.delete_mapper(self.realm, _mapper(idp, mapper_id), auth=self.auth_details())
        return Response(status=status.HTTP_204_NO_CONTENT)


class MapperTypes(RealmResource):
    """The mapper types the provider's type supports, by id (Keycloak's map)."""

    required_role = {"GET": VIEW}

    def get(self, request, realm, alias):
        idp = find(self.realm, alias)
        return Response({t.id: admin.mapper_type_rep(t) for t in mappers.mapper_types()
                         if t.applies_to(idp.provider_id)})


class ProviderFactory(RealmResource):
    """A provider type's description: its id and name (Keycloak serialises the factory)."""

    required_role = {"GET": VIEW}

    def get(self, request, realm, provider_id):
        provider_type = get_provider_type(provider_id)
        if provider_type is None:
            raise errors.BadRequest("HTTP 400 Bad Request")
        return Response({"id": provider_type.provider_id, "name": provider_type.name})


class _JsonOrForm(JSONOnly):
    """``import-config`` takes a JSON body or a multipart form (Keycloak's two methods)."""

    def select_parser(self, request, parsers):
        if request.content_type.startswith("multipart/form-data"):
            return next(p for p in parsers if p.media_type == "multipart/form-data")
        return parsers[0]


class ImportConfig(RealmResource):
    """A provider's config read from its metadata: POST ``{providerId, fromUrl}`` (the document
    fetched through ``realms.http.outbound``; the URL kept as ``metadataDescriptorUrl``) or a
    multipart form with ``providerId`` and ``file`` (its ``syncMode`` LEGACY unless the document
    says otherwise, as Keycloak)."""

    required_role = {"POST": MANAGE}
    parser_classes = (JSONParser, MultiPartParser)
    content_negotiation_class = _JsonOrForm

    def post(self, request, realm):
        data = request.data
        from_url = not request.FILES
        wanted = ("providerId", "fromUrl") if from_url else ("providerId",)
        if not hasattr(data, "get") or any(not data.get(key) for key in wanted) or (not from_url and "file" not in
                                                                                        request.FILES):
            raise errors.BadRequest("HTTP 400 Bad Request")
        try:
            provider_id = as_str(data.get("providerId"), "providerId")
            if from_url and data.get("alias"):
                admin.check_alias(as_str(data["alias"], "alias"))
        except RepresentationError as exc:
            raise errors.Invalid(str(exc)) from None
        except admin.Refused as exc:
            raise refused(exc) from None
        provider_type = get_provider_type(provider_id)
        if provider_type is None:
            raise errors.Invalid(f"Invalid identity provider id [{provider_id}]")
        url, document = "", None
        if from_url:
            url = as_str(data["fromUrl"], "fromUrl")
        else:
            document = request.FILES["file"].read(outbound.JSON_MAX_BYTES + 1)
            if len(document) > outbound.JSON_MAX_BYTES:
                raise errors.Invalid("The metadata file is too large")
            document = document.decode("utf-8", "replace")
        try:
            config = admin.import_config(provider_type, url=url, document=document)
        except admin.Refused as exc:
            raise errors.Invalid(exc.message) from None
        return Response(config)


# -- users/{id}/federated-identity -------------------------------------------------------------


class FederatedIdentities(RealmResource):
    """The user's links to identity providers."""

    required_role = {"GET": "view-users"}

    def get(self, request, realm, user_id):
        links = FederatedIdentity.objects.filter(user=self._located).select_related("identity_provider") \
            .order_by("identity_provider__alias")
        return Response([admin.link_rep(link) for link in links])


class FederatedIdentityDetail(RealmResource):
    """Link the user to their account at an identity provider (``userId``, ``userName``), or
    remove the link."""

    required_role = {"POST": "manage-users", "DELETE": "manage-users"}

    def _provider(self, alias):
        idp = IdentityProvider.objects.filter(realm=self.realm, alias=alias).first()
        if idp is None:
            raise errors.NotFound("Identity Provider not found")
        return idp

    def post(self, request, realm, user_id, alias):
        idp = self._provider(alias)
        body = request.data if isinstance(request.data, dict) else {}
        try:
            subject = as_str(body.get("userId") or "", "userId")
            user_name = as_str(body.get("userName") or "", "userName")
            admin.add_link(self.realm, self._located, idp, subject, user_name, auth=self.auth_details())
        except RepresentationError as exc:
            raise errors.Invalid(str(exc)) from None
        except admin.Refused as exc:
            raise refused(exc) from None
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, user_id, alias):
        link = FederatedIdentity.objects.filter(user=self._located, identity_provider__alias=alias) \
            .select_related("identity_provider").first()
        if link is None:
            raise errors.NotFound("Link not found")
        admin.remove_link(self.realm, self._located, link, auth=self.auth_details())
        return Response(status=status.HTTP_204_NO_CONTENT)
