"""The Account REST API (Keycloak's AccountRestService) below ``/realms/<realm>/account/``.

The caller is the bearer of an access token of this realm (checked by the verifier the protocol
app registers, as for the Admin API) that names ``account`` among its audiences; service
accounts are refused. What it may do is read, as Keycloak does, from the token's
``resource_access.account.roles``: ``manage-account`` or ``view-profile`` to read,
``manage-account`` to change, ``view-applications``, ``view-consent``/``manage-consent`` and
``view-groups`` for those resources. Changes are recorded as the realm's events."""
import json

from django.db import transaction
from rest_framework import exceptions
from rest_framework.response import Response

from ..admin_api import errors
from ..admin_api.reps import brief_user_rep, group_reps
from ..admin_api.views import ApiView
from ..audit import events
from ..authz import sharing
from ..brokering import linking
from ..credentials import credential_types
from ..errors import ReadOnlyUser
from ..http import cors
from ..http.web import client_address
from ..models import Client, ClientSession, Credential, UserSession
from ..signin import flows
from ..sso import devices, sessions
from ..users import actions, consents, organizations
from . import ACCOUNT_CLIENT, account_realm, profile

MANAGE_ACCOUNT, VIEW_PROFILE = "manage-account", "view-profile"
VIEW_APPLICATIONS, VIEW_CONSENT, MANAGE_CONSENT, VIEW_GROUPS = (
    "view-applications", "view-consent", "manage-consent", "view-groups")
_CATEGORIES = ("basic-authentication", "two-factor", "passwordless")


def _millis(moment):
    return int(moment.timestamp() * 1000)


def _seconds(moment):
    return int(moment.timestamp())


class AccountResource(ApiView):
    """A resource of the Account REST API; ``required_role`` names the roles of which the token
    must hold one (by method, like the Admin API's views)."""

    required_role = ()

    def initial(self, request, *args, **kwargs):
        self.realm = account_realm(kwargs["realm"])
        if self.realm is None:
            raise errors.NotFound("account management not enabled")
        super().initial(request, *args, **kwargs)

    def perform_authentication(self, request):
        caller = request.user  # BearerAuthentication: 401 without a live token
        audience = caller.claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if (caller.realm.pk != self.realm.pk or ACCOUNT_CLIENT not in audiences
                or caller.user.service_account_client_id is not None):
            raise exceptions.AuthenticationFailed()
        self.user = caller.user
        self.session_id = caller.claims.get("sid", "")
        self.allowed_origins = caller.claims.get("allowed-origins") or []

    def finalize_response(self, request, response, *args, **kwargs):
        # As Keycloak: a browser app of another origin may call the API when its token allows it.
        cors.add(request._request, response, getattr(self, "allowed_origins", None))
        return super().finalize_response(request, response, *args, **kwargs)

    def check_permissions(self, request):
        if not hasattr(self, request.method.lower()):
            return
        roles = self.required_role
        if isinstance(roles, dict):
            roles = roles.get("GET" if request.method == "HEAD" else request.method, ())
        held = ((request.user.claims.get("resource_access") or {}).get(ACCOUNT_CLIENT) or {}).get("roles") or []
        if not any(role in held for role in roles):
            raise exceptions.PermissionDenied()

    def event(self, type, **fields):
        events.emit(self.realm, type, client_id=self.request.user.client_id, user_id=self.user.pk,
                    ip_address=client_address(self.request._request), **fields)


class Account(AccountResource):
    """GET the user's profile (with ``userProfileMetadata`` unless ``userProfileMetadata=false``),
    POST changes to it."""

    required_role = {"GET": (MANAGE_ACCOUNT, VIEW_PROFILE), "POST": (MANAGE_ACCOUNT,)}

    def get(self, request, realm):
        metadata = request.query_params.get("userProfileMetadata", "true").lower() != "false"
        return Response(profile.representation(self.user, with_metadata=metadata))

    def post(self, request, realm):
        if not isinstance(request.data, dict):
            raise errors.BadRequest("unknown_error", "Unable to parse the request")
        try:
            problems = profile.update(self.user, request.data)
        except ReadOnlyUser:  # Keycloak's answer to a ReadOnlyException here; other refusals: the handler's
            raise errors.Invalid("readOnlyUserMessage") from None
        if problems:
            self.event("UPDATE_PROFILE_ERROR", error="invalid_input", details={"context": "ACCOUNT"})
            return Response(profile.error_body(problems), status=400)
        self.event("UPDATE_PROFILE", details={"context": "ACCOUNT"})
        return Response(status=204)


def offered_credential_types(realm, held):
    """[(type, create action, update action, the user's credentials of it)] for the account
    console, in Keycloak's order: the types the realm's flows check (Keycloak's
    getEnabledCredentialTypes), each action only while the realm has it enabled (Keycloak's
    CredentialTypeMetadata)."""
    enabled = flows.enabled_credential_types(realm)
    out = []
    for kind in credential_types():
        if not kind.category or kind.type not in enabled:
            continue
        create, update = (a if a and actions.action_enabled(realm, a) else None
                          for a in (kind.create_action, kind.update_action))
        out.append((kind, create, update, [c for c in held if c.type == kind.type]))
    out.sort(key=lambda o: _CATEGORIES.index(o[0].category) if o[0].category in _CATEGORIES else len(_CATEGORIES))
    return out


def _credential_rep(credential):
    rep = {"id": credential.id, "type": credential.type, "createdDate": _millis(credential.created),
           "credentialData": json.dumps(credential.credential_data or {})}
    if credential.user_label:
        rep["userLabel"] = credential.user_label
    return rep


class Credentials(AccountResource):
    """The credential types the user can hold, each with the user's credentials of it (no
    secrets) and the required action that sets one up (``createAction``) or replaces it
    (``updateAction``). ``type`` filters; ``user-credentials=false`` leaves the credentials out."""

    required_role = (MANAGE_ACCOUNT, VIEW_PROFILE)

    def get(self, request, realm):
        only = request.query_params.get("type")
        include = request.query_params.get("user-credentials", "true").lower() != "false"
        held = self.user.stored_credentials() if include else []
        out = []
        for kind, create, update, mine in offered_credential_types(self.realm, held):
            if (only and kind.type != only) or (include and not (mine or create or update)):
                continue  # filtered out, or nothing the user can do with it
            container = {"type": kind.type, "category": kind.category, "displayName": kind.display_name,
                         "helptext": kind.help_text, "iconCssClass": kind.icon_css_class,
                         "createAction": create, "updateAction": update, "removeable": kind.removeable}
            container = {k: v for k, v in container.items() if v is not None}
            if include:
                container["userCredentialMetadatas"] = [{"credential": _credential_rep(c)} for c in mine]
            out.append(container)
        return Response(out)


class CredentialDetail(AccountResource):
    required_role = (MANAGE_ACCOUNT,)

    def delete(self, request, realm, credential_id):
        credential = Credential.objects.filter(pk=credential_id, user=self.user).first()
        if credential is None:
            raise errors.NotFound("Credential not found")
        kind = next((k for k in credential_types() if k.type == credential.type), None)
        if kind is not None and not kind.removeable:
            raise errors.BadRequest("unknown_error", "Credential can not be removed")
        credential.delete()
        self.user.forget_credentials()
        details = {"credential_type": credential.type, "credential_id": credential_id}
        if credential.user_label:
            details["credential_user_label"] = credential.user_label
        if credential.type == Credential.OTP:
            self.event("REMOVE_TOTP", details=details)
        self.event("REMOVE_CREDENTIAL", details=details)
        return Response(status=204)


def _session_rep(user_session, current_id, clients):
    realm = user_session.realm
    max_lifespan = sessions.session_max_lifespan(realm, user_session) or 0
    rep = {"id": user_session.pk, "ipAddress": user_session.ip_address, "started": _seconds(user_session.started),
           "lastAccess": _seconds(user_session.last_refresh),
           "expires": _seconds(user_session.started) + max_lifespan,
           "browser": devices.of_session(user_session)["browser"],
           "clients": [{"clientId": c.client_id, "clientName": c.name} if c.name else {"clientId": c.client_id}
                       for c in clients.get(user_session.pk, ())]}
    if user_session.pk == current_id:
        rep["current"] = True
    return rep


def live_sessions(realm, user):
    """The user's online SSO sessions (past ones are ended on the way) and their clients."""
    live = [s for s in (sessions.get_valid_session(realm, pk) for pk in
                        UserSession.objects.filter(realm=realm, user=user, offline=False).values_list("pk", flat=True))
            if s is not None]
    clients = {}
    for cs in ClientSession.objects.filter(user_session__in=[s.pk for s in live]).select_related("client"):
        clients.setdefault(cs.user_session_id, []).append(cs.client)
    return live, clients


def device_reps(user_sessions, current_id, clients):
    """Sessions grouped by the device they come from (Keycloak groups by OS and its version)."""
    grouped = {}
    for s in sorted(user_sessions, key=lambda s: s.last_refresh, reverse=True):
        device = devices.of_session(s)
        rep = grouped.setdefault(device["os"] + device["osVersion"], {
            "os": device["os"], "osVersion": device["osVersion"], "device": device["device"],
            "mobile": device["mobile"], "lastAccess": 0, "sessions": []})
        if s.pk == current_id:
            rep["current"] = True
        rep["lastAccess"] = max(rep["lastAccess"], _seconds(s.last_refresh))
        rep["sessions"].append(_session_rep(s, current_id, clients))
    return list(grouped.values())


class Sessions(AccountResource):
    """GET the user's sessions; DELETE signs out all but the caller's (all with ``current=true``)."""

    required_role = {"GET": (MANAGE_ACCOUNT, VIEW_PROFILE), "DELETE": (MANAGE_ACCOUNT,)}

    def get(self, request, realm):
        live, clients = live_sessions(self.realm, self.user)
        return Response([_session_rep(s, self.session_id, clients) for s in live])

    def delete(self, request, realm):
        everything = request.query_params.get("current", "false").lower() == "true"
        for user_session in UserSession.objects.filter(realm=self.realm, user=self.user, offline=False):
            if everything or user_session.pk != self.session_id:
                _sign_out(self, user_session)
        return Response(status=204)


def _sign_out(view, user_session):
    user_session.realm = view.realm
    with transaction.atomic():
        sessions.end_session(user_session, reason=sessions.REASON_LOGOUT)
    view.event("LOGOUT", session_id=user_session.pk)


class SessionDetail(AccountResource):
    """DELETE one of the user's sessions; a session of someone else is left alone (204 all the
    same, as Keycloak, so ids cannot be probed)."""

    required_role = (MANAGE_ACCOUNT,)

    def delete(self, request, realm, session_id):
        user_session = UserSession.objects.filter(pk=session_id, realm=self.realm, user=self.user).first()
        if user_session is not None:
            _sign_out(self, user_session)
        return Response(status=204)


class Devices(AccountResource):
    required_role = (MANAGE_ACCOUNT, VIEW_PROFILE)

    def get(self, request, realm):
        live, clients = live_sessions(self.realm, self.user)
        return Response(device_reps(live, self.session_id, clients))


def application_reps(realm, user, name=None):
    """Keycloak's account ClientRepresentation of every application the user uses now (online or
    offline), has consented to, or the realm always shows; bearer-only clients never."""
    in_use, offline = set(), set()
    for cs in ClientSession.objects.filter(user_session__user=user, user_session__realm=realm).select_related(
            "client", "user_session"):
        (offline if cs.user_session.offline else in_use).add(cs.client_id)
    granted = {c.client.pk: c for c in consents.user_consents(user)}
    shown = Client.objects.filter(realm=realm).filter(
        pk__in=in_use | offline | set(granted)) | Client.objects.filter(realm=realm, always_display_in_console=True)
    reps = []
    for client in shown.distinct().order_by("client_id"):
        if client.bearer_only or (name and name.lower() not in (client.name or "").lower()):
            continue
        rep = {"clientId": client.client_id, "clientName": client.name or None, "description": client.description or None,
               "userConsentRequired": client.consent_required, "inUse": client.pk in in_use,
               "offlineAccess": client.pk in offline, "rootUrl": client.root_url or None,
               "baseUrl": client.base_url or None,
               "effectiveUrl": ((client.root_url or "") + (client.base_url or "")) or None}
        consent = granted.get(client.pk)
        if consent is not None:
            rep["consent"] = consent_rep(realm, consent)
            for key, attribute in (("logoUri", "logoUri"), ("policyUri", "policyUri"), ("tosUri", "tosUri")):
                rep[key] = client.attributes.get(attribute) or None
        reps.append({k: v for k, v in rep.items() if v is not None})
    return reps


def consent_rep(realm, consent):
    return {"grantedScopes": [{"id": s.pk, "name": s.attributes.get("consent.screen.text") or s.name,
                               "displayText": profile.scope_text(realm, s)} for s in consent.scopes],
            "createdDate": _millis(consent.created), "lastUpdatedDate": _millis(consent.updated)}


class Applications(AccountResource):
    required_role = (MANAGE_ACCOUNT, VIEW_APPLICATIONS)

    def get(self, request, realm):
        return Response(application_reps(self.realm, self.user, request.query_params.get("name")))


def _client_or_404(realm, client_id):
    client = Client.objects.filter(realm=realm, client_id=client_id).first()
    if client is None:
        raise errors.NotFound(f"No client with clientId: {client_id} found.")
    return client


class ApplicationConsent(AccountResource):
    required_role = {"GET": (MANAGE_ACCOUNT, VIEW_CONSENT, MANAGE_CONSENT), "DELETE": (MANAGE_ACCOUNT, MANAGE_CONSENT)}

    def get(self, request, realm, client_id):
        client = _client_or_404(self.realm, client_id)
        consent = next((c for c in consents.user_consents(self.user) if c.client.pk == client.pk), None)
        if consent is None:
            return Response(status=204)
        return Response(consent_rep(self.realm, consent))

    def delete(self, request, realm, client_id):
        client = Client.objects.filter(realm=self.realm, client_id=client_id).first()
        if client is None:
            message = f"No client with clientId: {client_id} found."
            self.event("REVOKE_GRANT_ERROR", error="client_not_found", details={"reason": message})
            raise errors.NotFound(message)
        consents.revoke_consent(self.user, client)
        self.event("REVOKE_GRANT", details={"revoked_client": client.client_id})
        return Response(status=204)


def _count(request, name):
    """``first`` / ``max`` of a list: absent, or a whole number not below zero."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    if not raw.isdigit():
        raise errors.Invalid(f"Invalid parameter: {name}")
    return int(raw)


class LinkedAccounts(AccountResource):
    """Keycloak's LinkedAccountsResource: ``linked=true`` the user's links, ``linked=false`` the
    providers the user may link, neither both (Keycloak's older form); ``search``, ``first``,
    ``max`` as Keycloak's."""

    required_role = (MANAGE_ACCOUNT, VIEW_PROFILE)

    def get(self, request, realm):
        raw = request.query_params.get("linked")
        linked = None if raw is None else raw.lower() == "true"
        return Response(linking.linked_accounts(self.realm, self.user, linked=linked,
                                                search=request.query_params.get("search"),
                                                first=_count(request, "first"), most=_count(request, "max")))


class LinkedAccount(AccountResource):
    """DELETE a link (REMOVE_FEDERATED_IDENTITY), refused with Keycloak's messages."""

    required_role = (MANAGE_ACCOUNT,)

    def delete(self, request, realm, alias):
        try:
            linking.unlink(request._request, self.realm, self.user, alias, client_id=request.user.client_id)
        except linking.Refused as exc:
            raise errors.Invalid(exc.message) from None
        return Response(status=204)


class Groups(AccountResource):
    required_role = (MANAGE_ACCOUNT, VIEW_GROUPS)

    def get(self, request, realm):
        brief = request.query_params.get("briefRepresentation", "true").lower() != "false"
        return Response(group_reps(None, self.user.realm, self.user.groups.all().order_by("name"), brief))


class Organizations(AccountResource):
    """The user's organizations (Keycloak's brief OrganizationRepresentation), none while the
    realm has organizations off."""

    required_role = (MANAGE_ACCOUNT, VIEW_PROFILE)

    @staticmethod
    def list_for(realm, user):
        if not realm.organizations_enabled:
            return []
        return [organizations.rep(o) for o in organizations.of_user(user).prefetch_related("domains")]

    def get(self, request, realm):
        return Response(self.list_for(self.realm, self.user))


class SupportedLocales(AccountResource):
    """Any account token may read them (Keycloak checks no role here)."""

    def check_permissions(self, request):
        pass

    def get(self, request, realm):
        return Response(list(self.realm.supported_locales or []))


# User-managed access (Keycloak's account ResourcesService and ResourceService) ------------------

def resource_rep(client, resource, scopes=None):
    """Keycloak's account Resource: the resource, its scopes (``scopes`` given: those granted or
    asked instead) and the resource server as ``client``."""
    rep = {"_id": resource["_id"], "name": resource["name"], "uris": resource.get("uris", []),
           "scopes": [{"name": s["name"]} for s in resource["scopes"]] if scopes is None else [{"name": s} for s in scopes],
           "client": {"clientId": client.client_id, "name": client.name or None, "baseUrl": client.base_url or None}}
    for key in ("displayName", "icon_uri"):
        if resource.get(key):
            rep[key] = resource[key]
    return rep


def permission_reps(by_user):
    """Keycloak's account Permission: who, and the scopes."""
    return [{"username": u.username, "firstName": u.first_name or None, "lastName": u.last_name or None,
             "email": u.email or None, "scopes": scopes} for u, scopes in by_user.items()]


def _paged(request, items):
    """Keycloak's queryResponse: with both ``first`` and ``max``, that page and Link headers."""
    first, most = _count(request, "first"), _count(request, "max")
    if first is None or most is None:
        return Response(items)
    page, more = items[first:first + most], len(items) > first + most
    links = []
    url = request._request.build_absolute_uri(request.path)
    if more:
        links.append(f'<{url}?first={first + most}&max={most}>; rel="next"')
    if first > 0:
        links.append(f'<{url}?first={max(first - most, 0)}&max={most}>; rel="prev"')
    response = Response(page)
    if links:
        response["Link"] = ", ".join(links)
    return response


class UmaForbidden(errors.Invalid):
    """403 ``{"errorMessage": ...}``: Keycloak's ErrorResponse of the account ``resources`` routes."""

    status_code = 403


class UserManagedResource(AccountResource):
    """A route below ``resources``: as Keycloak's AccountRestService, refused while the realm's
    ``userManagedAccessAllowed`` is off, before the caller's roles are looked at."""

    required_role = (MANAGE_ACCOUNT,)

    def check_permissions(self, request):
        if not self.realm.user_managed_access_allowed:
            raise UmaForbidden("User-managed access not enabled")
        super().check_permissions(request)


class Resources(UserManagedResource):
    """The user's own resources (``name`` filters)."""

    def get(self, request, realm):
        owned = sharing.owned(self.realm, self.user, request.query_params.get("name"))
        return _paged(request, [resource_rep(c, r) for c, r in owned])


class SharedWithMe(UserManagedResource):
    """The resources others shared with the user, each with the scopes granted."""

    def get(self, request, realm):
        shared = sharing.shared_with_me(self.realm, self.user, request.query_params.get("name"))
        return _paged(request, [resource_rep(c, r, scopes) for c, r, scopes in shared])


class SharedWithOthers(UserManagedResource):
    """The user's resources shared with others, each with its ``permissions``."""

    def get(self, request, realm):
        out = []
        for client, resource in sharing.owned(self.realm, self.user):
            granted = sharing.granted(client, resource, self.user)
            if granted:
                out.append({**resource_rep(client, resource, []), "permissions": permission_reps(granted)})
        return _paged(request, out)


class PendingRequests(UserManagedResource):
    """What the user asked others for and awaits: one entry per scope asked, as Keycloak's."""

    def get(self, request, realm):
        out = []
        for client, resource, scopes in sharing.pending(self.realm, self.user):
            out += [resource_rep(client, resource, [s]) for s in scopes] or [resource_rep(client, resource, [])]
        return Response(out)


class OwnedResource(UserManagedResource):
    """A resource of the user's: 404 ``resource_not_found``, another's 400 ``invalid_resource``."""

    def owned(self, resource_id):
        client, resource = sharing.find(self.realm, resource_id)
        if resource is None:
            raise errors.NotFound("resource_not_found")
        if resource.get("owner", {}).get("id") != self.user.pk:
            raise errors.BadRequest("invalid_resource")
        return client, resource


class ResourceDetail(OwnedResource):
    def get(self, request, realm, resource_id):
        return Response(resource_rep(*self.owned(resource_id)))


class ResourcePermissions(OwnedResource):
    """GET whom the resource is shared with; PUT Keycloak's list of ``{username, scopes}``: each
    user then holds exactly those scopes (``[]``: nothing)."""

    def get(self, request, realm, resource_id):
        client, resource = self.owned(resource_id)
        return Response(permission_reps(sharing.granted(client, resource, self.user)))

    def put(self, request, realm, resource_id):
        client, resource = self.owned(resource_id)
        body = request.data
        if not isinstance(body, list) or not body or not all(
                isinstance(p, dict) and isinstance(p.get("scopes", []), list) for p in body):
            raise errors.BadRequest("invalid_permissions")
        with transaction.atomic():
            for permission in body:
                try:
                    requester = sharing.find_user(self.realm, permission.get("username"))
                    sharing.share(client, resource, self.user, requester, permission.get("scopes") or [])
                except sharing.UnknownUser as exc:
                    raise errors.NotFound(str(exc)) from None
                except sharing.Refused as exc:
                    raise errors.BadRequest(exc.code, exc.detail) from None
        return Response(status=204)


class ResourcePermissionRequests(OwnedResource):
    """The requests awaiting the owner on this resource."""

    def get(self, request, realm, resource_id):
        client, resource = self.owned(resource_id)
        return Response(permission_reps(sharing.requests(client, resource, self.user)))


class ResourceUser(OwnedResource):
    """The user a username or e-mail names (the share dialog's check), 204 when none."""

    def get(self, request, realm, resource_id):
        self.owned(resource_id)
        try:
            user = sharing.find_user(self.realm, request.query_params.get("value"))
        except sharing.UnknownUser:
            return Response(status=204)
        return Response(brief_user_rep(user))
