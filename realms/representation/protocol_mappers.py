"""Protocol mappers (of clients and client scopes): fields, parsing, import and export."""
from ..models import ProtocolMapper
from .fields import as_bool, as_str, as_str_map, json_fields, model_fields, spec_of

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
            self.save(ProtocolMapper(**owner, **fields), m["_path"], _MAPPER_FIELDS)
