"""Administering identity providers: the one place a provider, a mapper or a user's link to a
provider is created, changed or removed by an administrator (the Admin REST API, the console and
realm import check through here), with Keycloak's checks and messages and its admin events
(resource types IDENTITY_PROVIDER and IDENTITY_PROVIDER_MAPPER, so webhooks fire).

Also Keycloak's representations of them (``rep``, ``mapper_rep``, ``mapper_type_rep``,
``link_rep``): the Admin API answers them and the admin events carry them. A provider's
``clientSecret`` is never answered: Keycloak's ``**********`` stands for it, and a change carrying
``**********`` keeps the stored secret. Keycloak's vault references (``${vault.key}``) are refused:
this server has no vault to resolve them, and storing one would send the reference itself to the
provider as the secret."""
import re

from django.db import transaction

from ..audit import admin_events
from ..errors import RealmsError
from ..models import AuthenticationFlow, FederatedIdentity, IdentityProvider, IdentityProviderMapper
from ..users.organizations import OrganizationError
from . import mappers
from . import organizations as org_links
from .providers import get_provider_type

SECRET_VALUE = "**********"  # Keycloak's ComponentRepresentation.SECRET_VALUE
SECRET_KEYS = ("clientSecret",)  # the config entries Keycloak's StripSecretsUtils masks
_VAULT = re.compile(r"^\$\{vault\.[^}]+\}$")
# Keycloak's ReservedCharValidator (RFC 3986's reserved characters and the backslash).
_RESERVED = re.compile(r"[:/?#@!$&()*+,;=\[\]\\]")
_SPACE = re.compile(r"\s")
USER_AUTHENTICATION = "USER_AUTHENTICATION"  # Keycloak's IdentityProviderType of a sign-in provider


class Refused(RealmsError):
    """A change Keycloak refuses: ``status`` 400 (``{"errorMessage"}``), 409 (a name taken) or
    ``reserved`` (Keycloak's ReservedCharException: 400 ``{"error": message}``)."""

    def __init__(self, message, status=400, *, reserved=False):
        super().__init__(message)
        self.message, self.status, self.reserved = message, status, reserved


METADATA_DESCRIPTOR_URL = "metadataDescriptorUrl"  # Keycloak's IdentityProviderModel key


def import_config(provider_type, *, url="", document=None):
    """Keycloak's ``import-config``: the config ``provider_type`` reads from its metadata, fetched
    from ``url`` through ``realms.http.outbound`` or given as ``document`` (an uploaded file's
    text). The Admin API and the console both call this; ``Refused`` says why it could not."""
    from ..http import outbound
    from .providers import BrokerError

    if document is None:
        try:
            document = outbound.fetch(url).decode("utf-8", "replace")
        except outbound.OutboundError as exc:
            raise Refused(f"Could not fetch the metadata from {url}: {exc}") from None
    try:
        config = dict(provider_type.import_config(document))
    except ValueError as exc:
        raise Refused(f"{provider_type.name or provider_type.provider_id}: {exc}") from None
    except BrokerError as exc:
        raise Refused(f"The metadata could not be read: {exc.detail or exc.message_key}") from None
    if url:
        config[METADATA_DESCRIPTOR_URL] = url
    else:
        config.setdefault("syncMode", IdentityProvider.LEGACY)
    return config


# -- representations ---------------------------------------------------------------------------


def rep(idp, *, brief=False, export=False):
    """Keycloak's IdentityProviderRepresentation of ``idp``: ``brief`` the ids, names and enabled
    (``briefRepresentation``); ``export`` a realm export's (the secret in plain, as Keycloak's
    full export; no organization); otherwise the Admin API's, the secret masked."""
    out = {"alias": idp.alias, "internalId": idp.internal_id, "providerId": idp.provider_id,
           "enabled": idp.enabled}
    if idp.display_name:
        out["displayName"] = idp.display_name
    if brief:
        return out
    config = dict(idp.config or {})
    if not export:
        config.update({k: SECRET_VALUE for k in SECRET_KEYS if config.get(k)})
    out.update({"updateProfileFirstLoginMode": "on", "trustEmail": idp.trust_email, "storeToken": idp.store_token,
                "addReadTokenRoleOnCreate": idp.add_read_token_role_on_create, "authenticateByDefault": False,
                "linkOnly": idp.link_only, "hideOnLogin": idp.hide_on_login, "config": config})
    if idp.first_broker_login_flow_alias:
        out["firstBrokerLoginFlowAlias"] = idp.first_broker_login_flow_alias
    if idp.post_broker_login_flow_alias:
        out["postBrokerLoginFlowAlias"] = idp.post_broker_login_flow_alias
    if not export:
        out["types"] = [USER_AUTHENTICATION]
        if idp.pk:
            org_links.with_organization(out, idp)
    return out


def mapper_rep(mapper):
    """Keycloak's IdentityProviderMapperRepresentation."""
    return {"id": mapper.id, "name": mapper.name, "identityProviderAlias": mapper.identity_provider.alias,
            "identityProviderMapper": mapper.mapper_type, "config": dict(mapper.config or {})}


def mapper_type_rep(mapper_type):
    """Keycloak's IdentityProviderMapperTypeRepresentation (``mapper-types``)."""
    return {"id": mapper_type.id, "name": mapper_type.name, "category": mapper_type.category,
            "helpText": mapper_type.help_text, "properties": [dict(p) for p in mapper_type.properties]}


def link_rep(link):
    """Keycloak's FederatedIdentityRepresentation."""
    return {"identityProvider": link.identity_provider.alias, "userId": link.subject, "userName": link.user_name}


# -- checks ------------------------------------------------------------------------------------


def check_alias(alias):
    """Keycloak's ReservedCharValidator.validateNoSpace: the alias is a path segment of the
    broker's URLs."""
    if _SPACE.search(alias or ""):
        raise Refused("Empty Space not allowed.", reserved=True)
    found = _RESERVED.search(alias or "")
    if found:
        raise Refused(f"Character '{found.group()}' not allowed.", reserved=True)


def _check_flow(realm, alias):
    if alias and not AuthenticationFlow.objects.filter(realm=realm, alias=alias).exists():
        raise Refused(f"No available authentication flow with alias: {alias}")


def _check_secrets(idp, existing):
    config = idp.config
    for key in SECRET_KEYS:
        value = config.get(key)
        if value == SECRET_VALUE:
            kept = (existing.config or {}).get(key) if existing is not None else None
            if kept:
                config[key] = kept
            else:
                config.pop(key)
        elif isinstance(value, str) and _VAULT.match(value):
            raise Refused(f"{key}: vault references ({value}) are not supported: this server has no vault; "
                          "give the secret itself (it is encrypted at rest)")


def check(realm, idp, existing=None):
    """Keycloak's checks of a provider before it is stored (RepresentationToModel.toModel and the
    resources' own): its type is registered, its alias is a URL-safe name no other provider of the
    realm has, its flows exist in the realm, its config is what its type accepts. ``existing``:
    the stored provider ``idp`` replaces (its secret kept where ``**********`` was sent)."""
    provider_type = get_provider_type(idp.provider_id)
    if provider_type is None:
        raise Refused(f"Invalid identity provider id [{idp.provider_id}]")
    if not idp.alias:
        raise Refused("Identity Provider alias is required")
    check_alias(idp.alias)
    if existing is not None and existing.alias != idp.alias:
        raise Refused("Identity Provider alias cannot be changed")
    _check_flow(realm, idp.first_broker_login_flow_alias)
    _check_flow(realm, idp.post_broker_login_flow_alias)
    # The organization keys (kc.org.*) live on the provider's organization links, not in its config.
    idp.config = {k: v for k, v in org_links.stored_config(idp.config).items() if v not in (None, "")}
    _check_secrets(idp, existing)
    mode = idp.config.get("syncMode")
    if mode is not None and mode not in IdentityProvider.SYNC_MODES:
        raise Refused(f"syncMode must be one of {', '.join(IdentityProvider.SYNC_MODES)}, not {mode!r}")
    try:
        idp.config = provider_type.clean_config(idp.config)
    except ValueError as exc:
        raise Refused(str(exc)) from None
    others = IdentityProvider.objects.filter(realm=realm, alias=idp.alias)
    if existing is not None:
        others = others.exclude(pk=existing.pk)
    if others.exists():
        raise Refused(f"Identity Provider {idp.alias} already exists", status=409)
    if len(idp.alias) > 255 or len(idp.display_name or "") > 255:
        raise Refused("alias and displayName are 255 characters at most")


def check_mapper(realm, idp, mapper, existing=None):
    """A mapper names a registered mapper type compatible with its provider's type, and a name
    no other mapper of the provider has."""
    if not mapper.name:
        raise Refused("Mapper name is required")
    mapper_type = mappers.get_mapper_type(mapper.mapper_type)
    if mapper_type is None:
        raise Refused(f"Invalid identity provider mapper type [{mapper.mapper_type}]")
    if not mapper_type.applies_to(idp.provider_id):
        raise Refused(f"Mapper type {mapper.mapper_type} is not available for identity providers of type "
                      f"{idp.provider_id}")
    mapper.config = {k: v for k, v in dict(mapper.config or {}).items() if v not in (None, "")}
    mode = mapper.config.get("syncMode")
    if mode is not None and mode not in (mappers.INHERIT, *IdentityProvider.SYNC_MODES):
        raise Refused(f"syncMode must be one of {mappers.INHERIT}, {', '.join(IdentityProvider.SYNC_MODES)}, "
                      f"not {mode!r}")
    others = IdentityProviderMapper.objects.filter(identity_provider=idp, name=mapper.name)
    if existing is not None:
        others = others.exclude(pk=existing.pk)
    if others.exists():
        raise Refused(f"Failed to add mapper '{mapper.name}' to identity provider [{idp.provider_id}].")


# -- changes -----------------------------------------------------------------------------------


def _path(idp):
    return f"identity-provider/instances/{idp.alias}"


def _event(realm, operation, idp, auth):
    admin_events.record(realm, operation, "IDENTITY_PROVIDER", _path(idp), auth=auth,
                        representation=lambda: rep(idp))


def _organization(idp, representation, created):
    """The representation's ``organizationId`` and ``kc.org.*`` config keys, applied to the
    provider's organization link (``realms.brokering.organizations``)."""
    if representation is None:
        return
    try:
        org_links.apply_organization_fields(idp, representation, created=created)
    except OrganizationError as exc:
        raise Refused(str(exc)) from None


def create(realm, idp, *, auth=None, representation=None):
    """Store a new provider of ``realm`` (checked) and record its CREATE; ``representation``: the
    IdentityProviderRepresentation it came from (its organization fields are applied)."""
    idp.realm = realm
    check(realm, idp)
    with transaction.atomic():
        idp.save()
        _organization(idp, representation, True)
        _event(realm, "CREATE", idp, auth)
    return idp


def update(realm, idp, existing, *, auth=None, representation=None):
    """Replace the stored ``existing`` provider by ``idp`` (same internal id and alias)."""
    idp.realm, idp.internal_id = realm, existing.internal_id
    check(realm, idp, existing)
    idp._state.adding = False  # the stored row is replaced, not a new one inserted
    with transaction.atomic():
        idp.save(force_update=True)
        _organization(idp, representation, False)
        _event(realm, "UPDATE", idp, auth)
    return idp


def delete(realm, idp, *, auth=None):
    """Remove a provider with its mappers, its organizations' links and its users' links."""
    with transaction.atomic():
        admin_events.record(realm, "DELETE", "IDENTITY_PROVIDER", _path(idp), auth=auth)
        idp.delete()


def _mapper_event(realm, operation, mapper, auth):
    admin_events.record(realm, operation, "IDENTITY_PROVIDER_MAPPER",
                        f"{_path(mapper.identity_provider)}/mappers/{mapper.id}", auth=auth,
                        representation=None if operation == "DELETE" else (lambda: mapper_rep(mapper)))


def create_mapper(realm, idp, mapper, *, auth=None):
    mapper.realm, mapper.identity_provider = realm, idp
    check_mapper(realm, idp, mapper)
    with transaction.atomic():
        mapper.save()
        _mapper_event(realm, "CREATE", mapper, auth)
    return mapper


def update_mapper(realm, idp, mapper, existing, *, auth=None):
    mapper.realm, mapper.identity_provider, mapper.id = realm, idp, existing.id
    check_mapper(realm, idp, mapper, existing)
    mapper._state.adding = False
    with transaction.atomic():
        mapper.save(force_update=True)
        _mapper_event(realm, "UPDATE", mapper, auth)
    return mapper


def delete_mapper(realm, mapper, *, auth=None):
    with transaction.atomic():
        _mapper_event(realm, "DELETE", mapper, auth)
        mapper.delete()


def _link_path(user, idp):
    return f"users/{user.pk}/federated-identity/{idp.alias}"


def add_link(realm, user, idp, subject, user_name, *, auth=None):
    """An administrator links ``user`` to their account ``subject`` at ``idp`` (Keycloak's POST
    ``users/{id}/federated-identity/{alias}``): refused when the user has a link to the provider
    or another user has that account."""
    if FederatedIdentity.objects.filter(identity_provider=idp, user=user).exists():
        raise Refused("User is already linked with provider", status=409)
    if not subject:
        raise Refused("userId is required")
    if FederatedIdentity.objects.filter(identity_provider=idp, subject=subject).exists():
        raise Refused(f"The account {subject} of identity provider {idp.alias} is linked to another user",
                      status=409)
    link = FederatedIdentity(realm=realm, user=user, identity_provider=idp, subject=subject,
                             user_name=user_name or "")
    with transaction.atomic():
        link.save()
        admin_events.record(realm, "CREATE", "USER", _link_path(user, idp), auth=auth,
                            representation=lambda: link_rep(link))
    return link


def remove_link(realm, user, link, *, auth=None):
    with transaction.atomic():
        admin_events.record(realm, "DELETE", "USER", _link_path(user, link.identity_provider), auth=auth)
        link.delete()
