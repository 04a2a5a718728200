"""The account console: server-rendered pages of the realm's account theme at Keycloak's
console paths, for the browser's SSO session (the identity cookie, as Keycloak's account
forms had it; roles read from the database). A browser without a session is sent to sign in
with the ``account`` client and comes back. Credentials are set up or replaced by the required
actions themselves (``kc_action`` links, as Keycloak's console does); forms post back here
under Django's CSRF check."""
import functools
from urllib.parse import urlencode

from django.http import Http404, HttpResponseRedirect
from django.views.decorators.csrf import csrf_protect

from ..audit import events
from ..authz import sharing
from ..brokering import linking
from ..credentials import credential_types, password_policy
from ..errors import StoreRefused
from ..http import messages, themes
from ..http.messages import Message
from ..http.web import client_address, realm_url
from ..models import Client, Credential, User, UserSession, client_role_names, effective_roles
from ..signin.required_actions import delete_account
from ..sso import sessions, sso_cookie
from ..users import consents, storage, user_profile
from ..users import profile as declarative
from ..users.actions import action_enabled
from . import ACCOUNT_CLIENT, account_realm, api, profile, sign_in_url

SECTIONS = (  # (url name, message key), in the console's order
    ("account", "personalInfo"),
    ("account-signing-in", "signingIn"),
    ("account-device-activity", "deviceActivity"),
    ("account-linked-accounts", "linkedAccounts"),
    ("account-applications", "applications"),
    ("account-groups", "groups"),
    ("account-organizations", "organizations"),
    ("account-resources", "myResources"),
)
_PATHS = {"account": "", "account-signing-in": "account-security/signing-in",
          "account-device-activity": "account-security/device-activity",
          "account-linked-accounts": "account-security/linked-accounts", "account-applications": "applications",
          "account-groups": "groups", "account-organizations": "organizations",
          "account-resources": "resources"}


def _listed(realm, name):
    """As Keycloak's account console: Organizations and My resources only where the realm has them."""
    if name == "account-organizations":
        return realm.organizations_enabled
    return name != "account-resources" or realm.user_managed_access_allowed


def _url(realm, name):
    return f"/realms/{realm.name}/account/{_PATHS[name]}"


def page(section):
    """A console page: the realm, the signed-in user (else off to sign in), CSRF-checked posts."""
    def decorate(view):
        @functools.wraps(view)
        @csrf_protect
        def wrapper(request, realm, *args, **kwargs):
            realm_obj = account_realm(realm)
            if realm_obj is None:
                raise Http404("account management not enabled")
            user_session = sso_cookie.session_from_request(request, realm_obj)
            if user_session is None and "error" in request.GET:  # the sign-in failed: say so, no loop
                return themes.render(request, realm_obj, "error.html",
                                     {"message": request.GET.get("error_description") or request.GET["error"]},
                                     status=400)
            if user_session is None or "code" in request.GET:
                if user_session is not None:  # back from signing in: the address without the answer
                    return HttpResponseRedirect(request.path)
                target = sign_in_url(request, realm_obj, realm_url(request, realm) + f"/account/{_PATHS[section]}")
                if target is None:
                    raise Http404("no sign-in protocol")
                return HttpResponseRedirect(target)
            # The row, not the session cache's copy (which may hold an old list of credentials).
            user = User.objects.get(pk=user_session.user_id)
            held = client_role_names(effective_roles(user)).get(ACCOUNT_CLIENT, [])
            if user.service_account_client_id or not {"manage-account", "view-profile"} & set(held):
                return themes.render(request, realm_obj, "error.html", {"message": Message("errorTitle")},
                                     status=403)
            ctx = Console(request, realm_obj, user, user_session, section, "manage-account" in held)
            return view(request, ctx, *args, **kwargs)
        return wrapper
    return decorate


class Console:
    def __init__(self, request, realm, user, user_session, section, may_manage):
        self.request, self.realm, self.user, self.user_session = request, realm, user, user_session
        self.section, self.may_manage = section, may_manage

    def event(self, type, **fields):
        events.emit(self.realm, type, client_id=ACCOUNT_CLIENT, user_id=self.user.pk,
                    session_id=self.user_session.pk, ip_address=client_address(self.request), **fields)

    def action_url(self, action):
        """Where the console sends the browser to run a required action (kc_action)."""
        back = realm_url(self.request, self.realm.name) + f"/account/{_PATHS[self.section]}"
        return sign_in_url(self.request, self.realm, back, kc_action=action)

    def render(self, template, context=None, status=200):
        nav = [{"url": _url(self.realm, name), "key": key, "current": name == self.section}
               for name, key in SECTIONS if _listed(self.realm, name)]
        notice = self.request.GET.get("notice", "")
        base = {"user": self.user, "nav": nav, "section": self.section, "may_manage": self.may_manage,
                "notice": Message(notice) if notice in _NOTICES else None,
                "sign_out_url": f"/realms/{self.realm.name}/protocol/openid-connect/logout"}
        return themes.render(self.request, self.realm, template, {**base, **(context or {})}, status=status,
                             kind=themes.ACCOUNT)

    def done(self, notice):
        return HttpResponseRedirect(f"{self.request.path}?{urlencode({'notice': notice})}")


_NOTICES = {"accountUpdatedMessage", "accountPasswordUpdatedMessage", "sessionsSignedOut", "consentRevoked",
            "credentialRemoved", "unLinkSuccess", "shareSuccess", "unShareSuccess"}


def _forbidden_unless_manage(ctx):
    if not ctx.may_manage:
        raise Http404("not allowed")


@page("account")
def personal_info(request, ctx):
    errors, values, refused = {}, {}, ""
    if request.method == "POST":
        _forbidden_unless_manage(ctx)
        values = user_profile.submitted(ctx.realm, request.POST)
        # every attribute of the profile the user edits here, an empty multi-select included
        own = {a.name: request.POST.getlist(a.name) for a in declarative.Profile(ctx.realm, declarative.ACCOUNT).custom()
               if a.editable}
        data = {**{k: values[k] for k in ("username", "email", "firstName", "lastName")},
                "attributes": {**own, **({"locale": request.POST.get("locale", "")} if "locale" in request.POST
                                         else {})}}
        try:
            problems = profile.update(ctx.user, data)
        except StoreRefused as exc:  # the user's directory refused the change: nothing was saved
            problems, refused = [], exc.detail
        if not problems and not refused:
            ctx.event("UPDATE_PROFILE", details={"context": "ACCOUNT_OLD"})
            return ctx.done("accountUpdatedMessage")
        errors = {p["field"]: Message(p["errorMessage"], *p["params"]) for p in problems}
    rep = profile.representation(ctx.user)
    fields = []
    for attr in rep["userProfileMetadata"]["attributes"]:
        name = attr["name"]
        if name not in ("username", "email", "firstName", "lastName"):
            continue  # the locale below, the profile's own attributes from profile-attributes.html
        fields.append({"name": name, "label": name, "value": values.get(name, rep.get(name, "")),
                       "readonly": attr["readOnly"], "required": attr["required"], "error": errors.get(name),
                       "type": "email" if name == "email" else "text",
                       "autocomplete": {"email": "email", "firstName": "given-name", "lastName": "family-name",
                                        "username": "username"}[name]})
    locale = ((ctx.user.attributes or {}).get("locale") or [""])
    shown = {**rep.get("attributes", {}), **{k: v for k, v in values.items() if k not in rep}}
    return ctx.render("personal-info.html", {
        "fields": fields,
        "profile": user_profile.form(ctx.realm, declarative.ACCOUNT, shown, errors),
        # Keycloak's console: with UPDATE_EMAIL on, the address is read-only and changed by that action.
        "update_email_url": ctx.action_url(user_profile.UPDATE_EMAIL)
        if ctx.may_manage and user_profile.update_email_enabled(ctx.realm) else "",
        "supported_locales": list(ctx.realm.supported_locales or []) if ctx.realm.internationalization_enabled else [],
        "user_locale": locale[0] if isinstance(locale, list) else locale,
        "locale_error": errors.get("locale"), "refused": refused,
        # Keycloak's deleteAccountAllowed: the action enabled in the realm and the user's role.
        "delete_account_url": ctx.action_url(delete_account.DeleteAccount.provider_id)
        if action_enabled(ctx.realm, delete_account.DeleteAccount.provider_id) and delete_account.may_delete(ctx.user)
        else ""}, status=400 if errors or refused else 200)


@page("account-signing-in")
def signing_in(request, ctx):
    password_error = None
    if request.method == "POST":
        _forbidden_unless_manage(ctx)
        if request.POST.get("remove"):
            credential = Credential.objects.filter(pk=request.POST["remove"], user=ctx.user).first()
            kind = next((k for k in credential_types() if credential and k.type == credential.type), None)
            if credential is None or kind is None or not kind.removeable:
                raise Http404("no such credential")
            credential.delete()
            details = {"credential_type": credential.type, "credential_id": credential.pk}
            if credential.type == Credential.OTP:
                ctx.event("REMOVE_TOTP", details=details)
            ctx.event("REMOVE_CREDENTIAL", details=details)
            return ctx.done("credentialRemoved")
        password_error = _change_password(request, ctx)
        if password_error is None:
            return ctx.done("accountPasswordUpdatedMessage")
    held = ctx.user.stored_credentials()
    locale = messages.locale_for(request, ctx.realm, user=ctx.user)
    kinds = []
    for kind, create, update, mine in api.offered_credential_types(ctx.realm, held):
        if not (mine or create or update):
            continue
        label = messages.text(ctx.realm, locale, kind.display_name, theme=themes.theme_of(ctx.realm, themes.ACCOUNT))
        kinds.append({"kind": kind, "credentials": mine, "label": label,
                      "create_url": ctx.action_url(create) if create and ctx.may_manage else "",
                      "update_url": ctx.action_url(update) if update and mine and ctx.may_manage else ""})
    return ctx.render("signing-in.html", {
        "kinds": kinds, "password_error": password_error,
        "has_password": storage.is_configured_for(ctx.realm, ctx.user, Credential.PASSWORD),
    }, status=400 if password_error else 200)


def _change_password(request, ctx):
    """Keycloak's account password form: the current password, then the new one twice, checked
    and stored by the user's store (the realm database under the realm's policy, or the
    directory a federated user's password lives in). Answers the error (field, message) or None
    when changed."""
    current, new, confirm = (request.POST.get(n, "") for n in ("password", "password-new", "password-confirm"))
    try:
        store = storage.provider_of(ctx.user)
        if store.is_configured_for(ctx.realm, ctx.user, Credential.PASSWORD) and \
                not store.validate(ctx.realm, ctx.user, Credential.PASSWORD, current):
            ctx.event("UPDATE_PASSWORD_ERROR", error="invalid_user_credentials")
            return {"field": "password", "message": Message("invalidPasswordExistingMessage")}
        if not new:
            return {"field": "password-new", "message": Message("missingPasswordMessage")}
        if new != confirm:
            return {"field": "password-confirm", "message": Message("notMatchPasswordMessage")}
        storage.set_password(ctx.realm, ctx.user, new)
    except storage.Unavailable:
        return {"field": "password-new", "message": Message("userStorageUnavailableMessage")}
    except password_policy.PasswordPolicyError as exc:
        ctx.event("UPDATE_PASSWORD_ERROR", error="password_rejected")
        return {"field": "password-new", "message": exc.message()}
    ctx.event("UPDATE_PASSWORD")
    return None


@page("account-device-activity")
def device_activity(request, ctx):
    if request.method == "POST":
        _forbidden_unless_manage(ctx)
        chosen = request.POST.get("session", "")
        for user_session in UserSession.objects.filter(realm=ctx.realm, user=ctx.user, offline=False):
            if user_session.pk != ctx.user_session.pk and chosen in ("others", user_session.pk):
                user_session.realm = ctx.realm
                sessions.end_session(user_session, reason=sessions.REASON_LOGOUT)
                ctx.event("LOGOUT", details={"session": user_session.pk})
        return ctx.done("sessionsSignedOut")
    live, clients = api.live_sessions(ctx.realm, ctx.user)
    return ctx.render("device-activity.html",
                      {"devices": api.device_reps(live, ctx.user_session.pk, clients), "others": len(live) > 1})


@page("account-linked-accounts")
def linked_accounts(request, ctx):
    """Keycloak's "Linked accounts": the user's links (unlinked with a post) and the providers
    they may link (through the ``idp_link`` action, as Keycloak's console)."""
    error = None
    if request.method == "POST":
        _forbidden_unless_manage(ctx)
        try:
            linking.unlink(request, ctx.realm, ctx.user, request.POST.get("unlink", ""), client_id=ACCOUNT_CLIENT)
        except linking.Refused as exc:
            error = Message(exc.message)
        else:
            return ctx.done("unLinkSuccess")
    linked = linking.linked_accounts(ctx.realm, ctx.user, linked=True)
    available = linking.linked_accounts(ctx.realm, ctx.user, linked=False)
    for rep in available:
        rep["link_url"] = ctx.action_url(f"{linking.PROVIDER_ID}:{rep['providerAlias']}") if ctx.may_manage else ""
    return ctx.render("linked-accounts.html", {"linked": linked, "available": available, "error": error},
                      status=400 if error else 200)


@page("account-applications")
def applications(request, ctx):
    if request.method == "POST":
        _forbidden_unless_manage(ctx)
        client = Client.objects.filter(realm=ctx.realm, client_id=request.POST.get("revoke", "")).first()
        if client is None:
            raise Http404("no such client")
        consents.revoke_consent(ctx.user, client)
        ctx.event("REVOKE_GRANT", details={"revoked_client": client.client_id})
        return ctx.done("consentRevoked")
    reps = api.application_reps(ctx.realm, ctx.user)
    locale = messages.locale_for(request, ctx.realm, user=ctx.user)
    granted = {c.client.client_id: [profile.scope_text(ctx.realm, s, locale) for s in c.scopes]
               for c in consents.user_consents(ctx.user)}
    for rep in reps:
        rep["grantedTexts"] = granted.get(rep["clientId"], [])
    return ctx.render("applications.html", {"applications": reps})


@page("account-groups")
def groups(request, ctx):
    return ctx.render("groups.html", {"groups": ctx.user.groups.all().order_by("name")})


@page("account-organizations")
def organizations(request, ctx):
    reps = api.Organizations.list_for(ctx.realm, ctx.user)
    return ctx.render("organizations.html", {"organizations": reps})


@page("account-resources")
def resources(request, ctx):
    """Keycloak's "My resources" (user-managed access): the user's resources, whom each is shared
    with (revoked with a post), the requests awaiting them (accepted or denied), sharing with a
    user by username or e-mail; and the resources others shared with the user. Refused while the
    realm's user-managed access is off, as Keycloak's account pages answer 403."""
    if not _listed(ctx.realm, ctx.section):
        return themes.render(request, ctx.realm, "error.html", {"message": Message("errorTitle")}, status=403)
    error = None
    if request.method == "POST":
        _forbidden_unless_manage(ctx)
        error = _change_share(request, ctx)
        if error is None:
            return ctx.done("unShareSuccess" if request.POST.get("action") in ("revoke", "deny") else "shareSuccess")
    mine = [{"client": c, "resource": r, "id": r["_id"], "scopes": [s["name"] for s in r["scopes"]],
             "shared": sharing.granted(c, r, ctx.user), "requests": sharing.requests(c, r, ctx.user)}
            for c, r in sharing.owned(ctx.realm, ctx.user)]
    return ctx.render("resources.html", {
        "mine": mine, "error": error, "error_resource": request.POST.get("resource", ""),
        "shared_with_me": [{"client": c, "resource": r, "id": r["_id"], "scopes": scopes}
                           for c, r, scopes in sharing.shared_with_me(ctx.realm, ctx.user)],
        "pending": sharing.pending(ctx.realm, ctx.user)}, status=400 if error else 200)


def _change_share(request, ctx):
    """One change the owner posts: ``share`` (a username or e-mail and the scopes chosen),
    ``revoke`` (everything shared with a user), ``approve`` or ``deny`` (a user's request).
    Answers the error message, or None when done."""
    client, resource = sharing.find(ctx.realm, request.POST.get("resource", ""))
    if resource is None or resource.get("owner", {}).get("id") != ctx.user.pk:
        raise Http404("no such resource")
    action = request.POST.get("action")
    try:
        other = sharing.find_user(ctx.realm, request.POST.get("user", "").strip())
        if action == "share":
            scopes = request.POST.getlist("scope")
            if not scopes:
                return Message("selectScopes")
            # What was shared before stays: the form adds scopes.
            scopes += sharing.granted(client, resource, ctx.user).get(other, [])
            sharing.share(client, resource, ctx.user, other, list(dict.fromkeys(scopes)))
        elif action == "revoke":
            sharing.share(client, resource, ctx.user, other, [])
        elif action == "approve":
            sharing.approve(client, resource, ctx.user, other)
        elif action == "deny":
            sharing.deny(client, resource, ctx.user, other)
        else:
            raise Http404("no such action")
    except sharing.UnknownUser:
        return Message("userNotFound", request.POST.get("user", "").strip())
    except sharing.Refused:
        return Message("shareRefused")
    return None
