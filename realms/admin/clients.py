"""Clients, with their client scopes, dedicated protocol mappers and client roles."""
import copy

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.html import format_html_join
from django.utils.safestring import mark_safe

from .. import features
from ..models import Client, ClientScopeLink, IdentityProvider, ProtocolMapper, Role, UserSession
from ..representation.client_policies import client_write_refusal
from ..representation.services import add_default_client_scopes
from ..signin import engine
from ..users.accounts import enable_service_account
from .admin_permissions_page import urls as admin_permissions_urls
from .audit import admin_event, object_event
from .authz import tab_links
from .authz import urls as authz_urls
from .base import ConsoleAdmin, LinesField, RealmScopedInline, realm_owned_list_filter
from .keyed import Key, KeyedJsonForm, keyed_form
from .names import resolved, time_column
from .sessions import sessions_table

OIDC = "openid-connect"
PROTOCOL_NAMES = {OIDC: "OpenID Connect", "saml": "SAML"}
# Keycloak's client authenticators that the token endpoint checks (oidc.client_auth).
CLIENT_AUTHENTICATORS = [("client-secret", "Client Id and Secret"), ("client-jwt", "Signed JWT"),
                         ("client-secret-jwt", "Signed JWT with client secret"), ("client-x509", "X509 Certificate"),
                         ("client-x509-self-signed", "Self-signed X509 certificate")]

class _Switch(Key):
    """A client attribute switched by a checkbox: "true" when ticked; unticked, "false" where the
    client had the attribute, else left out (saving a form adds nothing the client did not have)."""

    def to_json(self, value, stored):
        return "true" if value else ("false" if stored is not None else None)


class _Aliases(Key):
    """Keycloak's multivalued client attribute: values joined by "##"."""

    def from_json(self, value):
        return [v for v in str(value).split("##") if v]

    def to_json(self, value, stored):
        return "##".join(value or [])


def _switch(key, label, help_text):
    return _Switch("attributes", key, forms.BooleanField(label=label, required=False, help_text=help_text),
                   omit_empty=True)


# Keycloak's capability switches kept as client attributes ("true"/"false").
CAPABILITY_SWITCHES = {
    "standard_token_exchange": _switch(
        "standard.token.exchange.enabled", "Standard Token Exchange",
        "A confidential client may exchange an access token issued to reach it for one of its own (RFC 8693)."),
    "device_authorization_grant": _switch(
        "oauth2.device.authorization.grant.enabled", "OAuth 2.0 Device Authorization Grant",
        "Devices without a browser sign the user in through a code entered on another device (RFC 8628)."),
    "ciba_grant": _switch(
        "oidc.ciba.grant.enabled", "OIDC CIBA Grant",
        "A confidential client may ask the server to authenticate a user on the user's own device (CIBA)."),
    "jwt_authorization_grant": _switch(
        "oauth2.jwt.authorization.grant.enabled", "JWT Authorization Grant",
        "A confidential client may trade an assertion signed by a trusted identity provider for tokens (RFC 7523)."),
    "dpop_bound_access_tokens": _switch(
        "dpop.bound.access.tokens", "OAuth 2.0 DPoP Bound Access Tokens Enabled",
        "Every token request must carry a DPoP proof (RFC 9449); the tokens are bound to its key. Off: a "
        "request with a proof still gets bound tokens."),
    "dpop_nonce_required": _switch(
        "dpop.nonce.required", "DPoP nonce required",
        "DPoP proofs of this client must carry the server's current nonce (RFC 9449 §8), at the token "
        "endpoint and at userinfo."),
    "resource_url": Key("attributes", "resource_url", forms.URLField(
        label="Resource URL", required=False, assume_scheme="https",
        help_text="This client as a resource server: the URI clients name in resource (RFC 8707) to get "
                  "tokens whose audience is this client."), omit_empty=True),
    "jwt_authorization_grant_idps": _Aliases(
        "attributes", "oauth2.jwt.authorization.grant.idp", forms.MultipleChoiceField(
            label="Allowed identity providers (JWT Authorization Grant)", required=False,
            help_text="The identity providers whose assertions this client may present; none: no assertion is "
                      "accepted."), omit_empty=True),
}


class _AnyAlg(Key):
    """Keycloak's request object signature algorithm: its "any" is the empty choice."""

    def from_json(self, value):
        return "" if value == "any" else value


def _choice(key, label, choices, help_text, kind=Key):
    return kind("attributes", key, forms.ChoiceField(label=label, required=False, choices=choices,
                                                     help_text=help_text), omit_empty=True)


_SIGNING_ALGS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
                 "HS256", "HS384", "HS512")
# Keycloak's Advanced settings for pushed authorization requests (RFC 9126) and request objects (RFC 9101).
REQUEST_SETTINGS = {
    "par_required": _switch(
        "require.pushed.authorization.requests", "Pushed authorization request required",
        "Authorization requests of this client must be pushed first (RFC 9126); any other is refused."),
    "request_object_required": _choice(
        "request.object.required", "Request object required",
        [("", "not required"), ("request or request_uri", "request or request_uri"),
         ("request only", "request only"), ("request_uri only", "request_uri only")],
        "Whether authorization requests must come as a request object, by value (request) or by reference "
        "(request_uri, a pushed request's too)."),
    "request_object_signature_alg": _choice(
        "request.object.signature.alg", "Request object signature algorithm",
        [("", "any"), ("none", "none (unsigned)"), *((alg, alg) for alg in _SIGNING_ALGS)],
        "The one algorithm this client's request objects may be signed with; any: any asymmetric one with its "
        "keys, or HS* with its secret. Unsigned objects only when none is chosen.", _AnyAlg),
    "request_uris": _Aliases("attributes", "request.uris", LinesField(
        label="Valid request URIs", required=False,
        help_text="The URLs a request_uri may name, one per line (wildcards as in redirect URIs); none: a "
                  "request object is never fetched."), omit_empty=True),
}
# Keycloak's X509 Certificate authenticator setting (Credentials) and certificate-bound tokens (Advanced).
MUTUAL_TLS = {
    "x509_subject_dn": Key("attributes", "x509.subjectdn", forms.CharField(
        label="Subject DN", required=False,
        help_text="X509 Certificate authenticator: the subject DN of the client's certificate, a regular "
                  "expression unless x509.allow.regex.pattern.comparison is false (then exactly, RFC 2253)."),
        omit_empty=True),
    "tls_bound_access_tokens": _switch(
        "tls.client.certificate.bound.access.tokens", "OAuth 2.0 Mutual TLS Certificate Bound Access Tokens Enabled",
        "Access and refresh tokens are bound to the client certificate of the token request (RFC 8705); every "
        "later use of them needs that certificate."),
}

# A Shared Signals receiver (oidc.ssf, docs/ssf.md): client attributes, as Keycloak's.
SHARED_SIGNALS = {
    "ssf_enabled": _switch(
        "ssf.enabled", "SSF Receiver",
        "This client may manage one stream of security events (CAEP, RISC) with ssf.manage / ssf.read tokens."),
    "ssf_default_subjects": Key("attributes", "ssf.defaultSubjects", forms.ChoiceField(
        label="SSF default subjects", required=False,
        choices=[("", "The realm's"), ("ALL", "ALL"), ("NONE", "NONE")],
        help_text="Whom the stream covers before the receiver adds subjects."), omit_empty=True),
    "ssf_user_subject_format": Key("attributes", "ssf.userSubjectFormat", forms.ChoiceField(
        label="SSF user subject format", required=False, choices=[("", "iss_sub"), ("email", "email")],
        help_text="How SETs name the user: issuer and user id, or the e-mail address (iss_sub when "
                  "the user has none)."), omit_empty=True),
    "ssf_signature_algorithm": Key("attributes", "ssf.signatureAlgorithm", forms.ChoiceField(
        label="SSF signature algorithm", required=False,
        choices=[("", "The realm's default"), *((a, a) for a in (
            "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"))],
        help_text="What the stream's SETs are signed with."), omit_empty=True),
    "ssf_stream_audience": Key("attributes", "ssf.streamAudience", forms.CharField(
        label="SSF stream audience", required=False, max_length=512,
        help_text="The aud of the stream's SETs; empty: <client id>/<stream id>."), omit_empty=True),
}

# What only OpenID Connect clients have (the SAML section comes from saml.admin).
OIDC_ONLY = {"public_client", "bearer_only", "client_authenticator_type", "standard_flow_enabled",
             "implicit_flow_enabled", "direct_access_grants_enabled", "service_accounts_enabled", "web_origins",
             "secret_status", "authorization_services_enabled", *CAPABILITY_SWITCHES, *REQUEST_SETTINGS, *MUTUAL_TLS,
             *SHARED_SIGNALS}


def protocol_choices():
    return [(p, PROTOCOL_NAMES.get(p, p)) for p in engine.provider_ids()["login-protocol"]]


class ClientScopeLinkInline(RealmScopedInline):
    model = ClientScopeLink
    classes = ("tab-client-scopes",)
    fields = ("client_scope", "default")
    verbose_name = "client scope"
    verbose_name_plural = "Client scopes (default: always in the token; unticked: optional, on request)"


class ClientProtocolMapperInline(RealmScopedInline):
    model = ProtocolMapper
    classes = ("tab-client-scopes",)
    fk_name = "client"
    fields = ("name", "protocol_mapper", "protocol", "consent_required", "config")
    verbose_name_plural = "Dedicated protocol mappers"


class ClientRoleInline(RealmScopedInline):
    model = Role
    classes = ("tab-roles",)
    fk_name = "client"
    fields = ("name", "description")
    verbose_name = "client role"
    verbose_name_plural = "Client roles (composites and attributes: under Roles)"


class ClientFormBase(KeyedJsonForm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        field = self.fields.get("jwt_authorization_grant_idps")
        if field is not None:
            realm_id = self.instance.realm_id if self.instance.pk else None
            aliases = list(IdentityProvider.objects.filter(realm_id=realm_id).order_by("alias")
                           .values_list("alias", flat=True)) if realm_id else []
            stored = self.initial.get("jwt_authorization_grant_idps") or []
            # An alias whose provider is gone stays on offer, so saving the form keeps it visibly.
            field.choices = [(a, a) for a in aliases] + [(a, f"{a} (no such provider)") for a in stored
                                                         if a not in aliases]

    protocol = forms.ChoiceField(choices=protocol_choices, initial="openid-connect",
                                 help_text="Save to see the settings of the protocol chosen.")
    client_authenticator_type = forms.ChoiceField(choices=CLIENT_AUTHENTICATORS, initial="client-secret",
                                                  label="Client Authenticator")

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("public_client") and cleaned.get("bearer_only"):
            raise ValidationError("A client is either public or bearer-only, not both.")
        return cleaned

    def _post_clean(self):
        # The realm's client policies auto-configure the client or refuse it, as at the Admin API.
        super()._post_clean()
        if self.errors or self.instance.realm_id is None:
            return
        refusal = client_write_refusal(self.instance.realm, self.instance, created=self.instance._state.adding,
                                       authenticator_given="client_authenticator_type" in self.fields)
        if refusal:
            self.add_error(None, f"{refusal[1]} ({refusal[0]})")


ClientForm = keyed_form("ClientForm", ClientFormBase, {**CAPABILITY_SWITCHES, **REQUEST_SETTINGS, **MUTUAL_TLS,
                                                      **SHARED_SIGNALS})


@admin.register(Client)
class ClientAdmin(ConsoleAdmin):
    view_role, manage_role, list_role = "view-clients", "manage-clients", "query-clients"
    form = ClientForm
    list_filter = realm_owned_list_filter("enabled", "public_client", "protocol")
    search_fields = ("client_id", "name")
    actions = ["regenerate_client_secret"]
    filter_horizontal = ("scope_roles",)
    line_list_fields = ("redirect_uris", "web_origins")
    readonly_fields = ("id", "secret_status", "created_at", "sessions", "authorization")
    created_at = time_column("created", "Created")
    inlines = [ClientScopeLinkInline, ClientProtocolMapperInline, ClientRoleInline]
    tabs = (("settings", "Settings"), ("keys", "Keys"), ("credentials", "Credentials"), ("roles", "Roles"),
            ("client-scopes", "Client scopes"), ("authorization", "Authorization"), ("sessions", "Sessions"),
            ("advanced", "Advanced"))
    fieldsets = [
        ("General settings", {"classes": ("tab-settings",), "fields": (
            "realm", "client_id", "name", "description", "enabled", "always_display_in_console", "protocol")}),
        ("Access settings", {"classes": ("tab-settings",), "fields": (
            "root_url", "base_url", "admin_url", "redirect_uris", "web_origins")}),
        ("Capability config", {"classes": ("tab-settings",), "fields": (
            "public_client", "bearer_only", "client_authenticator_type", "standard_flow_enabled",
            "implicit_flow_enabled", "direct_access_grants_enabled", "service_accounts_enabled",
            "authorization_services_enabled", *CAPABILITY_SWITCHES,
        )}),
        ("Login settings", {"classes": ("tab-settings",), "fields": ("consent_required", "frontchannel_logout")}),
        ("Client secret", {"classes": ("tab-credentials",), "fields": ("secret_status", "x509_subject_dn")}),
        ("Dedicated scope", {"classes": ("tab-client-scopes",), "fields": ("full_scope_allowed", "scope_roles")}),
        ("Authorization", {"classes": ("tab-authorization",), "fields": ("authorization",)}),
        ("Sessions", {"classes": ("tab-sessions",), "fields": ("sessions",)}),
        ("Pushed authorization and request objects", {"classes": ("tab-advanced",), "fields": (
            *REQUEST_SETTINGS,)}),
        ("Mutual TLS", {"classes": ("tab-advanced",), "fields": ("tls_bound_access_tokens",)}),
        ("Shared Signals", {"classes": ("tab-advanced",), "fields": tuple(SHARED_SIGNALS)}),
        ("Advanced", {"classes": ("tab-advanced",), "fields": (
            "attributes", "authentication_flow_binding_overrides", "node_re_registration_timeout",
            "not_before", "surrogate_auth_required", "id", "created_at",
        )}),
    ]

    def get_list_display(self, request):
        return ("client_id", "display_name", "enabled", "public_client", "protocol")

    @admin.display(description="Name", ordering="name")
    def display_name(self, obj):
        return resolved(obj.realm, obj.name)

    def chosen_protocol(self, request, obj):
        """The client's protocol; on the add page the one chosen first (``?protocol=``), OpenID
        Connect unless another is asked for."""
        if obj is not None:
            return obj.protocol
        wanted = request.GET.get("protocol", OIDC)
        return wanted if wanted in dict(protocol_choices()) else OIDC

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        if self.chosen_protocol(request, obj) != OIDC:
            for name in OIDC_ONLY:  # a declared field is in the form even when no section shows it
                form.base_fields.pop(name, None)
        if not features.enabled("ssf"):
            for name in SHARED_SIGNALS:
                form.base_fields.pop(name, None)
        if obj is None and "protocol" in form.base_fields:
            # Chosen before the form (its sections are the protocol's): fixed here, links switch it.
            chosen = self.chosen_protocol(request, obj)
            field = form.base_fields["protocol"] = copy.deepcopy(form.base_fields["protocol"])
            field.initial, field.disabled = chosen, True
            field.help_text = format_html_join(" ", '<a href="?protocol={}"{}>{}</a>', (
                (value, mark_safe(' aria-current="true"') if value == chosen else "", label)
                for value, label in protocol_choices()))
        return form

    def get_fieldsets(self, request, obj=None):
        """A SAML client's page (a new one's too) leaves out what only OpenID Connect clients have;
        a new client's page has no sessions or secret yet."""
        leave_out = {"sessions", "id", "created_at"} if obj is None else set()
        if obj is None or tab_links(obj) is None:  # Keycloak shows the tab while authorization is on
            leave_out.add("authorization")
        if self.chosen_protocol(request, obj) != OIDC:
            leave_out |= OIDC_ONLY
        if not features.enabled("ssf"):  # the Shared Signals settings do nothing then
            leave_out |= set(SHARED_SIGNALS)
        fieldsets = [(name, {**options, "fields": tuple(f for f in options["fields"] if f not in leave_out)})
                     for name, options in super().get_fieldsets(request, obj)]
        return [(name, options) for name, options in fieldsets if options["fields"]]

    @admin.display(description="Sessions")
    def sessions(self, obj):
        return sessions_table(UserSession.objects.filter(client_sessions__client=obj).distinct())

    @admin.display(description="Authorization")
    def authorization(self, obj):
        return format_html_join(" ", '<a class="button" href="{}">{}</a>', tab_links(obj) or ())

    def get_urls(self):
        # The realm's Permissions page edits the admin-permissions client: it lives among the clients' pages.
        return [*admin_permissions_urls(self), *authz_urls(self), *super().get_urls()]

    @admin.display(description="Client secret")
    def secret_status(self, obj):
        if not obj.confidential:
            return "None (public or bearer-only client)"
        if obj.secret_digest:
            return "Set. It is shown once, when generated; use the action \u201cRegenerate client secret\u201d."
        return "Not set yet: one is generated when the client is saved."

    def save_model(self, request, obj, form, change):
        secret = obj.regenerate_secret() if obj.confidential and not obj.secret_digest else None
        super().save_model(request, obj, form, change)
        if secret:
            self.message_user(request, f"Client secret of {obj.client_id}: {secret}  (copy it now; it will "
                                       f"not be shown again)", messages.WARNING)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        client = form.instance
        if not change:
            # Like Keycloak, a new client gets the realm's default client scopes of its protocol.
            linked = set(client.scope_links.values_list("pk", flat=True))
            add_default_client_scopes(client)
            for link in client.scope_links.exclude(pk__in=linked).select_related("client__realm"):
                object_event(request, "CREATE", link)
        if client.service_accounts_enabled:
            enable_service_account(client)

    @admin.action(description="Regenerate client secret (shown once)")
    def regenerate_client_secret(self, request, queryset):
        for client in queryset:
            if not client.confidential:
                self.message_user(request, f"{client.client_id} is a public or bearer-only client: it has "
                                           f"no secret.", messages.ERROR)
                continue
            with transaction.atomic():
                secret = client.regenerate_secret()
                client.save(update_fields=["secret_encrypted", "secret_digest"])
                admin_event(request, client.realm, "ACTION", "CLIENT", f"clients/{client.pk}/client-secret")
            self.message_user(request, f"New client secret of {client.client_id}: {secret}  (copy it now; "
                                       f"it will not be shown again)", messages.WARNING)
