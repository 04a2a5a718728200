"""Protocol mappers (of clients and client scopes): fields, parsing, import and export.

A protocol app registers the check of its mapper types (``register_mapper_check``); every write of
a mapper (import, partial import, Admin API) runs it, so a mapper type no app implements is
refused, never stored to do nothing."""
from ..models import ProtocolMapper
from ..registry import Registry
from .fields import RepresentationError, as_bool, as_str, as_str_map, json_fields, model_fields, spec_of

_MAPPER_CHECKS = Registry("protocol mapper checks")


def register_mapper_check(protocol, check):
    """``check(type_name, config, client)`` -> the refusal of a mapper of ``protocol`` or None; it
    may complete ``config`` (a generated salt). ``client``: the owning Client, None for a scope."""
    _MAPPER_CHECKS.add(protocol, check)


def check_mapper(mapper, path):
    """RepresentationError when the protocol's app refuses ``mapper`` (a ProtocolMapper with its
    owner set); protocols without a registered check keep their mappers as they are."""
    check = _MAPPER_CHECKS.get(mapper.protocol)
    if check is None:
        return
    mapper.config = dict(mapper.config or {})
    refusal = check(mapper.protocol_mapper, mapper.config, mapper.client if mapper.client_id or mapper.client else None)
    if refusal:
        raise RepresentationError(path, f"protocol mapper {mapper.name!r}: {refusal}")

_MAPPER_FIELDS = {
    "id": ("id", as_str),
    "name": ("name", as_str),
    "protocol": ("protocol", as_str),
    "protocolMapper": ("protocol_mapper", as_str),
    "consentRequired": ("consent_required", as_bool),
    "config": ("config", as_str_map),
}


def parse_mapper(m, path, p):
    values = p.take(m, path, spec_of(_MAPPER_FIELDS), required=("name", "protocolMapper"))
    return {"_path": path, "fields": model_fields(_MAPPER_FIELDS, values)}


def mapper_reps(mappers):
    return [json_fields(m, _MAPPER_FIELDS) for m in mappers]


class ProtocolMapperApplier:
    """The importer's step for protocol mappers (a part of importer._Applier)."""

    def add_mappers(self, mappers, **owner):
        for m in mappers:
            fields = dict(m["fields"])
            fields["id"] = self.id_for(ProtocolMapper, fields.get("id"))
            mapper = ProtocolMapper(**owner, **fields)
            check_mapper(mapper, m["_path"])
            self.save(mapper, m["_path"], _MAPPER_FIELDS)
