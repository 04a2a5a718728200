"""``subject_type`` and ``sector_identifier_uri`` of OIDC dynamic registration (OIDC Registration
§2), kept as Keycloak keeps them: an ``oidc-sha256-pairwise-sub-mapper`` on the client, whose
checks (``mappers.check_mapper``) apply as to any other write of the mapper."""
from realms.models import ProtocolMapper

from ..errors import InvalidClientMetadata
from ..mappers import PAIRWISE, SECTOR_IDENTIFIER_URI, check_mapper, check_pairwise

PUBLIC, PAIRWISE_TYPE = "public", "pairwise"
MAPPER_NAME = "pairwise subject identifier"  # Keycloak's SHA256PairwiseSubMapper.createPairwiseMapper


def _invalid(message):
    return InvalidClientMetadata(message, event_error="invalid_client_metadata")


def requested(meta):
    """(subject type, sector identifier URI) of the metadata; absent means public, as in Keycloak."""
    subject_type = meta.get("subject_type") or PUBLIC
    sector = meta.get("sector_identifier_uri") or ""
    if subject_type not in (PUBLIC, PAIRWISE_TYPE):
        raise _invalid(f"Invalid value for subject_type: {subject_type}")
    if not isinstance(sector, str):
        raise _invalid("Invalid value for sector_identifier_uri")
    return subject_type, sector


def for_new_client(meta, rep):
    """The representation of a client to register, with its pairwise mapper when asked for (checked,
    salted and stored with the client, in its transaction)."""
    subject_type, sector = requested(meta)
    if subject_type != PAIRWISE_TYPE:
        return rep
    mapper = {"name": MAPPER_NAME, "protocol": "openid-connect", "protocolMapper": PAIRWISE,
              "config": {SECTOR_IDENTIFIER_URI: sector}}
    return {**rep, "protocolMappers": [*rep.get("protocolMappers", []), mapper]}


def check_update(meta, rep):
    """Before an update is written: the refusal of a pairwise subject type the new redirect URIs do not fit."""
    subject_type, sector = requested(meta)
    if subject_type == PAIRWISE_TYPE:
        refusal = check_pairwise({SECTOR_IDENTIFIER_URI: sector}, rep.get("rootUrl") or "", rep.get("redirectUris"))
        if refusal:
            raise _invalid(refusal)


def apply_update(client, meta):
    """After an update: the client's pairwise mapper follows ``subject_type``; an existing one
    keeps its salt, so the users' subjects stay as the client knows them."""
    subject_type, sector = requested(meta)
    existing = list(ProtocolMapper.objects.filter(client=client, protocol_mapper=PAIRWISE))
    if subject_type == PUBLIC:
        ProtocolMapper.objects.filter(pk__in=[m.pk for m in existing]).delete()
    elif existing:
        for mapper in existing:
            mapper.config = {**mapper.config, SECTOR_IDENTIFIER_URI: sector}
            mapper.save(update_fields=["config"])
    else:
        config = {SECTOR_IDENTIFIER_URI: sector}
        check_mapper(PAIRWISE, config, None)  # the salt; the sector was checked by check_update
        ProtocolMapper.objects.create(client=client, name=MAPPER_NAME, protocol="openid-connect",
                                      protocol_mapper=PAIRWISE, config=config)


def describe(client, out):
    """``subject_type`` (and ``sector_identifier_uri``) of a registered client's metadata."""
    mapper = ProtocolMapper.objects.filter(client=client, protocol_mapper=PAIRWISE).first()
    if mapper is None:
        return out
    out = {**out, "subject_type": PAIRWISE_TYPE}
    if mapper.config.get(SECTOR_IDENTIFIER_URI):
        out["sector_identifier_uri"] = mapper.config[SECTOR_IDENTIFIER_URI]
    return out
