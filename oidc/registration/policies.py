"""The realm's client registration policies enforced, as Keycloak's ClientRegistrationPolicyManager
runs them: every ``Component`` of providerType ClientRegistrationPolicy whose ``subType`` is the
registration's kind (``anonymous`` or ``authenticated``) is asked before a registration, update,
view or removal and may change the client after it was created. A refusal is answered 403
``insufficient_scope`` "Policy '<name>' rejected request to client-registration service.
Details: <reason>" (Keycloak's words); a policy of an unknown provider refuses too.

Providers: ``trusted-hosts``, ``consent-required``, ``scope`` (full scope disabled),
``max-clients``, ``allowed-protocol-mappers``, ``allowed-client-templates``. The ``rep`` they read
is the request's ClientRepresentation (a JSON dict, after the OpenID metadata was converted)."""
import ipaddress
import socket
from urllib.parse import urlsplit

from realms.models import Client, Component, RealmDefaultClientScope
from realms.representation.components import REGISTRATION_POLICY

from ..errors import OidcError
from .auth import forbidden


class PolicyRefused(OidcError):
    """A client-registration policy refused the request (answered 403 by the views)."""


def _policies(realm, kind):
    return list(Component.objects.filter(realm=realm, provider_type=REGISTRATION_POLICY, sub_type=kind)
                .order_by("name", "pk"))


def _true(policy, name, default=True):
    values = policy.config.get(name) or []
    return default if not values else values[0].lower() == "true"


def _list(policy, name):
    return [v for v in (policy.config.get(name) or []) if v]


# trusted-hosts ----------------------------------------------------------------------------------

def _domain_match(host, trusted):
    if trusted.startswith("*."):
        return host == trusted[2:] or host.endswith("." + trusted[2:])
    return host == trusted


def _resolves_to(name, address):
    try:
        return any(info[4][0] == address for info in socket.getaddrinfo(name, None))
    except (OSError, UnicodeError):
        return False


def _host_trusted(policy, address):
    trusted = _list(policy, "trusted-hosts")
    if not address:
        return False
    if any(_resolves_to(h, address) for h in trusted if not h.startswith("*.")):
        return True
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if ip.is_loopback:
        hostname = "localhost"
    else:
        try:
            hostname = socket.gethostbyaddr(address)[0]
        except (OSError, UnicodeError):
            return False
        if not _resolves_to(hostname, address):  # forward-confirmed, as Keycloak checks
            return False
    return any(_domain_match(hostname, t) for t in trusted)


def _uri_host_trusted(policy, url, kind="URI"):
    trusted = _list(policy, "trusted-hosts")
    try:
        host = urlsplit(url).hostname
    except ValueError:
        host = None
    if not host:
        raise PolicyRefused(f"{kind} is malformed")
    return any(host == t for t in trusted if not t.startswith("*.")) or any(_domain_match(host, t) for t in trusted)


def _absolute(root, url):
    if not url or not url.startswith("/"):
        return url or None
    return root + url if root else None


def _trusted_hosts(policy, ctx, rep, action):
    if _true(policy, "host-sending-registration-request-must-match") and not _host_trusted(policy, ctx.ip_address):
        raise PolicyRefused("Host not trusted.")
    if action not in ("register", "update") or not _true(policy, "client-uris-must-match"):
        return
    # the representation's types were checked by its parser, which reads a number as its string
    root = str(rep.get("rootUrl") or "")
    base, admin = (str(rep[k]) if rep.get(k) is not None else None for k in ("baseUrl", "adminUrl"))
    for url in (root, _absolute(root, base), _absolute(root, admin)):
        if url and not _uri_host_trusted(policy, url, "URL"):
            raise PolicyRefused("URL doesn't match any trusted host or trusted domain")
    for uri in rep.get("redirectUris") or []:
        uri = _absolute(root, uri.rstrip("*")) if isinstance(uri, str) else None
        if uri and not _uri_host_trusted(policy, uri):
            raise PolicyRefused("URI doesn't match any trusted host or trusted domain")


# the others -----------------------------------------------------------------------------------

def _consent_required(policy, ctx, rep, action):
    if action == "update" and rep.get("consentRequired") is False:
        raise PolicyRefused("Not permitted to update consentRequired to false")


def _scope(policy, ctx, rep, action):
    if action == "update" and rep.get("fullScopeAllowed") is True:
        raise PolicyRefused("Not permitted to enable fullScopeAllowed")


def _max_clients(policy, ctx, rep, action):
    if action != "register":
        return
    try:
        limit = int(_list(policy, "max-clients")[0])
    except (IndexError, ValueError):
        limit = 200  # Keycloak's default
    if Client.objects.filter(realm=ctx.realm).count() >= limit:
        raise PolicyRefused(f"It's allowed to have max {limit} clients per realm")


def _protocol_mappers(policy, ctx, rep, action):
    if action not in ("register", "update"):
        return
    allowed = _list(policy, "allowed-protocol-mapper-types")
    for mapper in rep.get("protocolMappers") or []:
        if not isinstance(mapper, dict) or mapper.get("protocolMapper") not in allowed:
            raise PolicyRefused("ProtocolMapper type not allowed")


def _realm_scopes(policy, realm, default):
    allowed = list(_list(policy, "allowed-client-scopes"))
    if _true(policy, "allow-default-scopes"):
        allowed += RealmDefaultClientScope.objects.filter(realm=realm, default=default).values_list("client_scope__name",
                                                                                          flat=True)
    return allowed


def _client_scopes(policy, ctx, rep, action, client=None):
    if action not in ("register", "update"):
        return
    allowed = _realm_scopes(policy, ctx.realm, True) + _realm_scopes(policy, ctx.realm, False)
    requested = list(rep.get("defaultClientScopes") or []) + list(rep.get("optionalClientScopes") or [])
    if client is not None:  # scopes the client already has stay allowed
        had = set(client.scope_links.values_list("client_scope__name", flat=True))
        requested = [s for s in requested if s not in had]
    if any(s not in allowed for s in requested):
        raise PolicyRefused("Not permitted to use specified clientScope")


PROVIDERS = {
    "trusted-hosts": _trusted_hosts, "consent-required": _consent_required, "scope": _scope,
    "max-clients": _max_clients, "allowed-protocol-mappers": _protocol_mappers,
    "allowed-client-templates": _client_scopes,
}


def before(ctx, kind, action, rep=None, client=None):
    """Run the ``kind`` policies before ``action`` (register, update, view, delete); the refusal
    is the 403 Keycloak answers, the policy's name in the event's details."""
    for policy in _policies(ctx.realm, kind):
        check = PROVIDERS.get(policy.provider_id)
        try:
            if check is None:
                raise PolicyRefused(f"Policy of type '{policy.provider_id}' not found")
            if check is _client_scopes:
                check(policy, ctx, rep or {}, action, client if action == "update" else None)
            else:
                check(policy, ctx, rep or {}, action)
        except PolicyRefused as refused:
            ctx.details["client_registration_policy"] = policy.name
            raise forbidden(f"Policy '{policy.name}' rejected request to client-registration service. "
                            f"Details: {refused}") from None


def after_register(ctx, kind, client):
    """What the policies change on a new client: consent required, full scope off, mappers of
    types not allowed (the built-in ones too) removed."""
    changed = False
    for policy in _policies(ctx.realm, kind):
        if policy.provider_id == "consent-required":
            client.consent_required, changed = True, True
        elif policy.provider_id == "scope":
            client.full_scope_allowed, changed = False, True
        elif policy.provider_id == "allowed-protocol-mappers":
            client.protocol_mappers.exclude(
                protocol_mapper__in=_list(policy, "allowed-protocol-mapper-types")).delete()
    if changed:
        client.save(update_fields=["consent_required", "full_scope_allowed"])
