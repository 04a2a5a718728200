"""``.../protocol-mappers`` of a client (``/clients/{id}``) or a client scope
(``/client-scopes/{id}``), Keycloak's ProtocolMappersResource: ``models`` (list, create),
``models/{id}`` (read, change, delete), ``add-models`` (create several) and
``protocol/{protocol}``. Mappers in the export's JSON (``mapper_reps``, ``parse_mapper``)."""
from django.db import transaction
from rest_framework import status
from rest_framework.response import Response

from ..audit import admin_events
from ..models import ProtocolMapper
from ..representation import RepresentationError
from ..representation.fields import Parser
from ..representation.protocol_mappers import check_mapper, mapper_reps, parse_mapper
from . import errors
from .client_scopes import client_scope
from .clients import _client
from .query import check_fields, location
from .views import RealmResource


def _rep(mapper):
    return mapper_reps([mapper])[0]


def _check(mapper):
    """400 when the mapper's protocol refuses it (an unknown type, a pairwise sector that does not fit)."""
    try:
        check_mapper(mapper, "")
    except RepresentationError as exc:
        raise errors.Invalid(str(exc)) from None


class _Mappers(RealmResource):
    """``owner`` is ``"clients"`` or ``"client-scopes"`` (the path's resource); both need
    ``view-clients`` to read and ``manage-clients`` to change, as in Keycloak."""

    owner = None
    required_role = {"GET": "view-clients", "POST": "manage-clients", "PUT": "manage-clients",
                     "DELETE": "manage-clients"}

    def owner_of(self, owner_id):
        """(the mapper's owner keyword, the owner's path)."""
        if self.owner == "clients":
            return {"client": _client(self.realm, owner_id)}, f"clients/{owner_id}"
        return {"client_scope": client_scope(self.realm, owner_id)}, f"client-scopes/{owner_id}"

    def parse(self, data, current=None):
        """A mapper from a body (``current``: the mapper a PUT changes; the keys given replace its own)."""
        if current is not None and isinstance(data, dict):
            data = {**_rep(current), **data}
        try:
            fields = parse_mapper(data, "", Parser())["fields"]
        except RepresentationError as exc:
            raise errors.Invalid(str(exc)) from None
        fields.pop("id", None)
        return fields

    def create(self, owner, owner_path, body):
        mapper = ProtocolMapper(**owner, **self.parse(body))
        check_fields(mapper, exclude=["client", "client_scope"])
        _check(mapper)
        if ProtocolMapper.objects.filter(**owner, name=mapper.name).exists():
            raise errors.Conflict("Protocol mapper exists with same name")
        mapper.save()
        admin_events.record(self.realm, "CREATE", "PROTOCOL_MAPPER",
                            f"{owner_path}/protocol-mappers/models/{mapper.pk}",
                            auth=self.auth_details(), representation=lambda: _rep(mapper))
        return mapper


class Mappers(_Mappers):
    def get(self, request, realm, owner_id):
        owner, _ = self.owner_of(owner_id)
        return Response(mapper_reps(ProtocolMapper.objects.filter(**owner)))

    def post(self, request, realm, owner_id):
        owner, owner_path = self.owner_of(owner_id)
        with transaction.atomic():
            mapper = self.create(owner, owner_path, request.data)
        return Response(status=status.HTTP_201_CREATED, headers={
            "Location": location(request, f"{self.realm.name}/{owner_path}/protocol-mappers/models/{mapper.pk}")})


class AddMappers(_Mappers):
    def post(self, request, realm, owner_id):
        owner, owner_path = self.owner_of(owner_id)
        if not isinstance(request.data, list):
            raise errors.Invalid("Expected a list of ProtocolMapperRepresentation")
        with transaction.atomic():  # all or none
            for body in request.data:
                self.create(owner, owner_path, body)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MappersByProtocol(_Mappers):
    def get(self, request, realm, owner_id, protocol):
        owner, _ = self.owner_of(owner_id)
        return Response(mapper_reps(ProtocolMapper.objects.filter(**owner, protocol=protocol)))


class MapperDetail(_Mappers):
    def _mapper(self, owner_id, mapper_id):
        owner, owner_path = self.owner_of(owner_id)
        mapper = ProtocolMapper.objects.filter(**owner, pk=mapper_id).first()
        if mapper is None:
            raise errors.NotFound("Model not found")
        return mapper, owner, f"{owner_path}/protocol-mappers/models/{mapper.pk}"

    def get(self, request, realm, owner_id, mapper_id):
        return Response(_rep(self._mapper(owner_id, mapper_id)[0]))

    def put(self, request, realm, owner_id, mapper_id):
        mapper, owner, path = self._mapper(owner_id, mapper_id)
        for name, value in self.parse(request.data, mapper).items():
            setattr(mapper, name, value)
        check_fields(mapper, exclude=["client", "client_scope"])
        _check(mapper)
        if ProtocolMapper.objects.filter(**owner, name=mapper.name).exclude(pk=mapper.pk).exists():
            raise errors.Conflict("Protocol mapper exists with same name")
        with transaction.atomic():
            mapper.save()
            admin_events.record(self.realm, "UPDATE", "PROTOCOL_MAPPER", path, auth=self.auth_details(),
                                representation=lambda: _rep(mapper))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, owner_id, mapper_id):
        mapper, _, path = self._mapper(owner_id, mapper_id)
        with transaction.atomic():
            admin_events.record(self.realm, "DELETE", "PROTOCOL_MAPPER", path, auth=self.auth_details())
            mapper.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)
