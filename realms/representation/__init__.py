"""Realm import and export in Keycloak's RealmRepresentation JSON.

An import runs in three steps inside one transaction:

1. *parse*: the file is checked key by key against what the model holds and turned into plain
   dicts; a wrong type raises RepresentationError naming the JSON path; a key the model does not
   hold becomes a warning naming its path (never silently dropped);
2. *built-ins*: Keycloak's built-ins the file lacks (by name) are merged in (realms/data/builtins.py),
   so a created realm and an imported one take the same path;
3. *apply*: rows are written and names resolved; a dangling reference raises
   RepresentationError with its path and the transaction rolls everything back.

Export writes the same key names back; see docs/decisions/0002-realm-representation.md.

One module per resource (realm settings, clients, client scopes, protocol mappers, roles and
scope mappings, groups, users and credentials, components/keys), each holding its field table,
parsing, import step and export; ``fields`` holds what they share (docs/decisions/0018).
"""
from .components import self_signed
from .fields import RepresentationError
from .importer import ImportResult, import_realm
from .realm import REALM_FIELDS, export_realm

__all__ = ["REALM_FIELDS", "ImportResult", "RepresentationError", "export_realm", "import_realm", "self_signed"]
