"""A realm's identity providers in Keycloak's JSON: ``identityProviders`` and
``identityProviderMappers`` of a realm file (import, export, partial import) and the
IdentityProviderRepresentation the Admin API reads and answers (``to_representation``,
``from_representation``; the organizations' routes use them too), and the users'
``federatedIdentities``.

The checks are the Admin API's (``realms.brokering.admin.check``): a file naming a provider type
or a mapper type this server does not have, or a flow the realm lacks, is refused with the JSON
path, and the import changes nothing. A full export carries the client secret in plain, as
Keycloak's does (and as client secrets are exported); the Admin API never answers it."""
from ..brokering import admin
from ..models import FederatedIdentity, IdentityProvider, IdentityProviderMapper
from .fields import Parser, RepresentationError, as_bool, as_list, as_str, as_str_map, at

PROVIDER_FIELDS = {
    "internalId": ("internal_id", as_str),
    "alias": ("alias", as_str),
    "displayName": ("display_name", as_str),
    "providerId": ("provider_id", as_str),
    "enabled": ("enabled", as_bool),
    "trustEmail": ("trust_email", as_bool),
    "storeToken": ("store_token", as_bool),
    "addReadTokenRoleOnCreate": ("add_read_token_role_on_create", as_bool),
    "linkOnly": ("link_only", as_bool),
    "hideOnLogin": ("hide_on_login", as_bool),
    "firstBrokerLoginFlowAlias": ("first_broker_login_flow_alias", as_str),
    "postBrokerLoginFlowAlias": ("post_broker_login_flow_alias", as_str),
    "config": ("config", as_str_map),
}
# Keycloak computes these or keeps them for old clients only (``updateProfileFirstLoginMode`` is
# the review-profile step's config since Keycloak 2; ``types`` follows from the provider type).
_DERIVED = {"updateProfileFirstLoginMode", "updateProfileFirstLogin", "types", "organizationId"}
_LEGACY_HIDE = "hideOnLoginPage"  # Keycloak's config key before hideOnLogin; moved as Keycloak does
MAPPER_SPEC = {"id": as_str, "name": as_str, "identityProviderAlias": as_str, "identityProviderMapper": as_str,
               "config": as_str_map}
LINK_SPEC = {"identityProvider": as_str, "userId": as_str, "userName": as_str}

to_representation = admin.rep
mapper_representation = admin.mapper_rep


def _authenticate_by_default(value, path):
    if as_bool(value, path):
        raise RepresentationError(path, "authenticateByDefault is not supported (removed in Keycloak): use the "
                                        "identity-provider-redirector step's defaultProvider")
    return False


def parse_provider(data, path, p):
    """The model fields of one IdentityProviderRepresentation (unchecked against the realm)."""
    spec = {k: checker for k, (_, checker) in PROVIDER_FIELDS.items()}
    spec["authenticateByDefault"] = _authenticate_by_default
    values = p.take(data, path, spec, derived=_DERIVED)
    fields = {PROVIDER_FIELDS[k][0]: v for k, v in values.items() if k in PROVIDER_FIELDS}
    config = dict(fields.get("config") or {})
    legacy = config.pop(_LEGACY_HIDE, None)
    if legacy is not None and "hide_on_login" not in fields:
        fields["hide_on_login"] = legacy.lower() == "true"
    fields["config"] = config
    return fields


def from_representation(realm, data, existing=None):
    """An unsaved IdentityProvider of ``realm`` from the Admin API's body (Keycloak's
    RepresentationToModel.toModel: what the body leaves out takes the representation's default,
    ``enabled`` true and the rest false or empty). ``existing``: the stored provider a PUT
    replaces (its alias and type when the body leaves them out). ``organizationId`` and the
    ``kc.org.*`` config keys are applied to the provider's organization link by
    ``realms.brokering.admin.create``/``update`` from the same body. Checked by
    ``realms.brokering.admin.check`` when stored; RepresentationError for a malformed body."""
    if not isinstance(data, dict):
        raise RepresentationError("", "expected an IdentityProviderRepresentation")
    p = Parser()
    fields = parse_provider(data, "", p)
    if p.warnings:
        raise RepresentationError("", p.warnings[0])
    fields.pop("internal_id", None)
    if existing is not None:
        fields.setdefault("alias", existing.alias)
        fields.setdefault("provider_id", existing.provider_id)
    return IdentityProvider(realm=realm, **fields)


def mapper_from_representation(realm, data):
    """An unsaved IdentityProviderMapper from Keycloak's IdentityProviderMapperRepresentation
    (its provider is the path's; ``identityProviderAlias`` is not read)."""
    if not isinstance(data, dict):
        raise RepresentationError("", "expected an IdentityProviderMapperRepresentation")
    p = Parser()
    values = p.take(data, "", MAPPER_SPEC)
    if p.warnings:
        raise RepresentationError("", p.warnings[0])
    return IdentityProviderMapper(realm=realm, name=values.get("name", ""),
                                  mapper_type=values.get("identityProviderMapper", ""),
                                  config=values.get("config", {}))


# -- realm files -------------------------------------------------------------------------------


def parse_identity_providers(top, p):
    """``identityProviders`` and ``identityProviderMappers`` of a realm file: (providers, mappers)."""
    providers = [{"_path": f"identityProviders[{i}]", "fields": parse_provider(item, f"identityProviders[{i}]", p)}
                 for i, item in enumerate(as_list(top.get("identityProviders") or [], "identityProviders"))]
    mappers = [{"_path": f"identityProviderMappers[{i}]", **p.take(item, f"identityProviderMappers[{i}]", MAPPER_SPEC)}
               for i, item in enumerate(as_list(top.get("identityProviderMappers") or [], "identityProviderMappers"))]
    seen = set()
    for item in providers:
        alias = item["fields"].get("alias")
        if alias in seen:
            raise RepresentationError(at(item["_path"], "alias"), f"duplicate {alias!r}")
        seen.add(alias)
    return providers, mappers


def parse_links(values, path, p):
    """A user's ``federatedIdentities``: [(path, alias, user id, user name)]."""
    out = []
    for i, item in enumerate(values):
        link_path = f"{path}[{i}]"
        link = p.take(item, link_path, LINK_SPEC, required=("identityProvider", "userId"))
        out.append((link_path, link["identityProvider"], link["userId"], link.get("userName", "")))
    return out


def _refused(path, exc):
    return RepresentationError(path, exc.message)


class IdentityProviderApplier:
    """The importer's step for identity providers and their mappers (a part of
    importer._Applier); ``self.identity_providers`` maps the aliases to the rows users link to."""

    identity_providers = None

    def add_identity_providers(self, providers, mappers, *, replace=False):
        """Write the parsed providers (``replace``: a partial import's OVERWRITE of one that
        exists) and the mappers that name them; every one checked as the Admin API checks it."""
        if self.identity_providers is None:
            self.identity_providers = {i.alias: i for i in IdentityProvider.objects.filter(realm=self.realm)}
        written = []
        for item in providers:
            fields = dict(item["fields"])
            wanted = fields.pop("internal_id", None)
            idp = IdentityProvider(realm=self.realm, **fields)
            existing = self.identity_providers.get(idp.alias) if replace else None
            if existing is not None:
                existing.delete()
            idp.internal_id = self.id_for(IdentityProvider, wanted)
            try:
                admin.check(self.realm, idp)
            except admin.Refused as exc:
                raise _refused(item["_path"], exc) from None
            idp.save()
            self.identity_providers[idp.alias] = idp
            written.append(idp)
        self.add_identity_provider_mappers(mappers)
        return written

    def add_identity_provider_mappers(self, mappers):
        for item in mappers:
            path = item["_path"]
            idp = self.identity_providers.get(item.get("identityProviderAlias"))
            if idp is None:
                raise RepresentationError(at(path, "identityProviderAlias"),
                                          f"no identity provider {item.get('identityProviderAlias')!r} in "
                                          "identityProviders")
            mapper = IdentityProviderMapper(realm=self.realm, identity_provider=idp, name=item.get("name", ""),
                                            mapper_type=item.get("identityProviderMapper", ""),
                                            config=item.get("config", {}))
            mapper.id = self.id_for(IdentityProviderMapper, item.get("id"))
            try:
                admin.check_mapper(self.realm, idp, mapper)
            except admin.Refused as exc:
                raise _refused(path, exc) from None
            mapper.save()

    def links_of(self, user, links):
        """The FederatedIdentity rows of ``user``'s parsed ``federatedIdentities`` (unsaved): a
        provider the realm lacks, a second link to one provider or an account linked twice is
        refused with its path (``check_links`` then asks the database once for the rest)."""
        if self.identity_providers is None:
            self.identity_providers = {i.alias: i for i in IdentityProvider.objects.filter(realm=self.realm)}
        if not hasattr(self, "_link_paths"):
            self._link_paths, self._user_links = {}, set()
        out = []
        for path, alias, subject, user_name in links:
            idp = self.identity_providers.get(alias)
            if idp is None:
                raise RepresentationError(at(path, "identityProvider"), f"no identity provider {alias!r} in "
                                                                         "identityProviders")
            if (idp.pk, user.pk) in self._user_links:
                raise RepresentationError(path, f"the user is linked to {alias!r} twice")
            if (idp.pk, subject) in self._link_paths:
                raise RepresentationError(at(path, "userId"), f"account {subject!r} of {alias!r} is linked to "
                                                               "two users")
            self._user_links.add((idp.pk, user.pk))
            self._link_paths[(idp.pk, subject)] = path
            out.append(FederatedIdentity(realm=self.realm, user=user, identity_provider=idp, subject=subject,
                                         user_name=user_name))
        return out

    def check_links(self, links):
        """The accounts of ``links`` are not linked to a user already in the database (a partial
        import into a realm that has links)."""
        for idp_pk in {link.identity_provider_id for link in links}:
            subjects = [link.subject for link in links if link.identity_provider_id == idp_pk]
            for start in range(0, len(subjects), 10_000):
                taken = FederatedIdentity.objects.filter(identity_provider_id=idp_pk,
                                                         subject__in=subjects[start:start + 10_000]).first()
                if taken is not None:
                    path = self._link_paths[(idp_pk, taken.subject)]
                    raise RepresentationError(at(path, "userId"), f"account {taken.subject!r} is linked to "
                                                                   "another user already")


def export_identity_providers(realm):
    """(identityProviders, identityProviderMappers) of a full export."""
    providers = list(IdentityProvider.objects.filter(realm=realm).order_by("alias"))
    mappers = IdentityProviderMapper.objects.filter(realm=realm).select_related("identity_provider") \
        .order_by("identity_provider__alias", "name")
    return [admin.rep(i, export=True) for i in providers], [admin.mapper_rep(m) for m in mappers]


def links_rep(user):
    """A user's ``federatedIdentities`` (Keycloak exports them with the user)."""
    return [admin.link_rep(link) for link in user.federated_identities.select_related("identity_provider")
            .order_by("identity_provider__alias")]
