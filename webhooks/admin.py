"""Admin console for webhooks: endpoints of the current realm (see realms/admin/ for how the
console works in one realm at a time), the delivery log, and redelivery of one event or of a
time range (filter the events by date, select them, run the action)."""
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from realms.admin import ConsoleAdmin, RealmFilter
from realms.admin.names import time_column, when
from realms.audit.admin_events import console_auth

from . import catalogue, delivery, payloads, portal, schemas, services
from .models import Delivery, DeliveryAttempt, Endpoint, Message


class EndpointRealmFilter(RealmFilter):
    """The console's realm filter for rows that reach their realm through the endpoint."""

    def queryset(self, request, queryset):
        value = self.value()
        return queryset.filter(endpoint__realm_id=value) if value else queryset.none()


class EndpointForm(forms.ModelForm):
    event_types = forms.MultipleChoiceField(
        label="Event types", widget=admin.widgets.FilteredSelectMultiple("event types", is_stacked=False),
        choices=lambda: [(t, t) for t in ["*", *sorted({t.split(".", 1)[0] + ".*" for t in catalogue.all_types()}),
                                          *catalogue.all_types(), services.TEST_EVENT_TYPE]],
        required=False, help_text="None chosen or *: every event; resource.*: every event of that resource.")
    payload_version = forms.ChoiceField(
        label="Payload version", required=False,
        choices=lambda: [("", "Latest (fat) / none (thin)"), *((v, v) for v in sorted(catalogue.VERSIONS))],
        help_text="Fat payloads only: the shape of the object they carry; an endpoint keeps its version.")

    class Meta:
        model = Endpoint
        fields = ["realm", "url", "description", "event_types", "enabled", "rate_limit", "max_concurrency",
                  "ownership_handshake", "payload", "payload_version", "envelope", "ordered"]

    def clean_url(self):
        try:
            return services.validate_url(self.cleaned_data["url"])
        except services.WebhookError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_event_types(self):
        try:
            return services.validate_event_types(self.cleaned_data["event_types"])
        except services.WebhookError as exc:
            raise forms.ValidationError(str(exc)) from None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in {"payload", "envelope"} & set(self.fields):  # left out: the defaults, as in the REST API
            self.fields[name].required = False  # (none on a read-only page: every field is shown as text)

    def clean(self):
        data = super().clean()
        try:
            data["payload"], data["payload_version"], data["envelope"] = services.payload_settings(
                data.get("payload") or payloads.THIN, data.get("payload_version"),
                data.get("envelope") or payloads.STANDARD)
        except services.WebhookError as exc:
            raise forms.ValidationError({"payload_version": str(exc)}) from None
        url, old = data.get("url"), self.instance
        if url and data.get("ownership_handshake") and (
                old._state.adding or url != old.url or not old.ownership_handshake):
            try:
                services.check_ownership(url)
            except services.WebhookError as exc:
                raise forms.ValidationError({"url": str(exc)}) from None
        return data


@admin.register(Endpoint)
class EndpointAdmin(ConsoleAdmin):
    view_role, manage_role = "view-events", "manage-events"  # as the webhook API (decision 0015)
    """Realm scoping of the console (``ConsoleAdmin``); changes go through the service functions,
    which record their own admin events (``WEBHOOK_ENDPOINT``, never a webhook themselves)."""

    form = EndpointForm
    list_display = ("url", "description", "enabled", "disabled_reason", "created", "managed_by")
    list_filter = (RealmFilter, "enabled")
    search_fields = ("url", "description")
    readonly_fields = ("managed_by", "disabled_reason", "failing", "throttled", "slowed", "handshake", "public_keys",
                       "created", "schemas")
    # Times as the console shows every time (realms.admin.names.when), not in Django's format.
    created = time_column("created_at", "Created")
    failing = time_column("failing_since", "Failing since")
    throttled = time_column("throttled_until", "Throttled until")
    slowed = time_column("slow_until", "Slow until")
    handshake = time_column("handshake_at", "Handshake")
    actions = ["send_test_event", "rotate_secret", "rotate_secret_now", "enable", "portal_link", "revoke_portal_links"]

    def change_event(self, request, operation, obj):
        pass  # recorded by the service functions

    # An endpoint another app manages (a Shared Signals stream's) is shown, for its delivery log,
    # but neither edited nor deleted here: that would break what it carries without a word.
    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and (obj is None or payloads.owner_of(obj) is None)

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and (obj is None or payloads.owner_of(obj) is None)

    @admin.display(description="Managed by")
    def managed_by(self, obj):
        owner = payloads.owner_of(obj) if obj.pk else None
        if owner is None:
            return "-"
        text, link = owner
        return format_html('<a href="{}">{}</a>', link, text) if link else text

    @admin.display(description="Ed25519 public keys (v1a)")
    def public_keys(self, obj):
        return ", ".join(s.public_key for s in obj.active_secrets() if s.public_key) or "-"

    @admin.display(description="Event-type schemas")
    def schemas(self, obj):
        """Links to the JSON Schemas of the types this endpoint names, in its payload kind and
        version, and to the AsyncAPI document of every type."""
        named = [t for t in obj.event_types if t in catalogue.emitted_types()] if obj.pk else []
        query = f"?kind={obj.payload}&version={obj.payload_version}&envelope={obj.envelope}"
        links = format_html_join(", ", '<a href="{}">{}</a>', (
            (reverse("admin:webhooks_endpoint_schema", args=[t]) + query, t) for t in named))
        catalogue_links = format_html(
            '<a href="{}">Event types and payload versions</a> · <a href="{}">AsyncAPI document</a>',
            reverse("admin:webhooks_endpoint_event_types"), reverse("admin:webhooks_endpoint_asyncapi"))
        return format_html("{}{}{}", links, " · " if named else "", catalogue_links)

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("event-types.json", view(self.event_types_view), name="webhooks_endpoint_event_types"),
            path("asyncapi.json", view(self.asyncapi_view), name="webhooks_endpoint_asyncapi"),
            path("event-types/<str:event_type>/schema.json", view(self.schema_view), name="webhooks_endpoint_schema"),
            *super().get_urls(),
        ]

    def event_types_view(self, request):
        """What the Admin API's ``webhooks/event-types`` answers."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        return JsonResponse({"payloadVersions": catalogue.version_catalogue(), "eventTypes": schemas.event_types()})

    def asyncapi_view(self, request):
        if not self.has_view_permission(request):
            raise PermissionDenied
        return JsonResponse(schemas.asyncapi())

    def schema_view(self, request, event_type):
        if not self.has_view_permission(request):
            raise PermissionDenied
        if event_type not in catalogue.emitted_types():
            raise Http404("No such event type.")
        try:
            kind, version, envelope = services.payload_settings(
                request.GET.get("kind", "thin"), request.GET.get("version"), request.GET.get("envelope", "standard"))
        except services.WebhookError as exc:
            return JsonResponse({"errorMessage": str(exc)}, status=400)
        return JsonResponse(schemas.body_schema(event_type, kind, version, envelope))

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        if change:
            # The form already set the new values on obj; the service compares with the stored row.
            stored = Endpoint.objects.get(pk=obj.pk)
            services.update_endpoint(stored, who=console_auth(request),
                                     **{k: data[k] for k in form.changed_data if k != "realm"})
            return
        created, secret = services.create_endpoint(
            obj.realm, data["url"], data["event_types"], description=data["description"], enabled=data["enabled"],
            rate_limit=data["rate_limit"], max_concurrency=data["max_concurrency"],
            ownership_handshake=data["ownership_handshake"], payload=data["payload"],
            payload_version=data["payload_version"], envelope=data["envelope"], ordered=data["ordered"],
            who=console_auth(request))
        obj.pk = created.pk
        obj._state.adding = False
        obj.refresh_from_db()
        messages.warning(request, f"Signing secret of {created.url} (shown once, keep it now): {secret}")

    @admin.action(description="Send a test event")
    def send_test_event(self, request, queryset):
        for endpoint in queryset:
            message = services.send_test_event(endpoint)
            self.message_user(request, f"Test event {message.id} queued for {endpoint.url}.")

    def delete_model(self, request, obj):
        services.delete_endpoint(obj, who=console_auth(request))

    def delete_queryset(self, request, queryset):
        for endpoint in queryset:
            services.delete_endpoint(endpoint, who=console_auth(request))

    def _rotate(self, request, queryset, overlap):
        for endpoint in queryset:
            secret = services.rotate_secret(endpoint, overlap_seconds=overlap, who=console_auth(request))
            messages.warning(request, f"New secret of {endpoint.url} (shown once): {secret}")

    @admin.action(description="Rotate secret (old one keeps signing for 24 h)")
    def rotate_secret(self, request, queryset):
        self._rotate(request, queryset, services.DEFAULT_ROTATION_OVERLAP)

    @admin.action(description="Rotate secret now (after a leak: old one stops at once)")
    def rotate_secret_now(self, request, queryset):
        self._rotate(request, queryset, 0)

    @admin.action(description="Create a consumer portal link (valid 7 days)")
    def portal_link(self, request, queryset):
        for endpoint in queryset:
            url, expires_at = portal.issue_link(request, endpoint, who=console_auth(request))
            messages.warning(request, f"Consumer portal link of {endpoint.url}, valid until "
                                      f"{when(expires_at, endpoint.realm)} (whoever holds it manages the endpoint): {url}")

    @admin.action(description="Revoke every consumer portal link")
    def revoke_portal_links(self, request, queryset):
        for endpoint in queryset:
            portal.revoke_links(endpoint, who=console_auth(request))
            self.message_user(request, f"Consumer portal links of {endpoint.url} revoked.")

    @admin.action(description="Enable (clears the failure state)")
    def enable(self, request, queryset):
        for endpoint in queryset:
            services.update_endpoint(endpoint, who=console_auth(request), enabled=True)


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    """Events sent as webhooks. Redelivering a filtered date range is how a time range is replayed."""

    list_display = ("id", "type", "created")
    list_filter = (RealmFilter, "type")
    date_hierarchy = "created_at"
    search_fields = ("id", "type")
    readonly_fields = ("id", "realm", "type", "payload", "created", "source_event_id")
    created = time_column("created_at", "Created")
    actions = ["redeliver"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.action(description="Redeliver to every endpoint it went to")
    def redeliver(self, request, queryset):
        count = delivery.redeliver(Delivery.objects.filter(message__in=queryset))
        self.message_user(request, f"{count} deliveries queued again (same event ids).")


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ("message", "endpoint", "state", "attempts", "next_attempt", "last_status", "last_error")
    list_filter = (EndpointRealmFilter, "state")
    date_hierarchy = "created_at"
    search_fields = ("message__id", "endpoint__url")
    list_select_related = ("message", "endpoint__realm")
    actions = ["redeliver"]
    next_attempt = time_column("next_attempt_at", "Next attempt", realm=lambda obj: obj.endpoint.realm)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.action(description="Redeliver")
    def redeliver(self, request, queryset):
        count = delivery.redeliver(queryset)
        self.message_user(request, f"{count} deliveries queued again (same event ids).")


@admin.register(DeliveryAttempt)
class DeliveryAttemptAdmin(admin.ModelAdmin):
    """The delivery log: one row per attempt."""

    list_display = ("message_id", "endpoint", "number", "started", "status", "success", "duration_ms", "error")
    list_filter = (EndpointRealmFilter, "success")
    date_hierarchy = "started_at"
    search_fields = ("message_id",)
    list_select_related = ("endpoint__realm",)
    started = time_column("started_at", "Started", realm=lambda obj: obj.endpoint.realm)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
