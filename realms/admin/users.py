"""Users: details, role mappings and groups, credentials (never shown), setting a password,
enabling and disabling."""
from django import forms
from django.contrib import admin, messages
from django.contrib.admin.options import IS_POPUP_VAR
from django.contrib.auth import update_session_auth_hash
from django.contrib.auth.forms import SetPasswordForm
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from .. import password_policy
from ..admin_permissions import administered_realms, console_admin, visible_users
from ..models import Credential, User
from ..accounts import create_user
from .audit import admin_event, object_event, role_ids, role_mapping_events
from .base import ConsoleAdmin, adopt, realm_owned_list_filter


class CredentialInline(admin.TabularInline):
    """Credentials by type and date only; the secret is never shown. Deleting one is allowed
    (a lost authenticator); a password is set through "Set password"."""

    model = Credential
    fields = readonly_fields = ("type", "user_label", "priority", "created")
    extra = 0
    can_delete = True

    def has_add_permission(self, request, obj=None):
        return False


class UserPasswordForm(SetPasswordForm):
    """Sets the password under the realm's password policy (``password_policy.set_password``:
    refused with Keycloak's message, else hashed into a Credential row); the raw value is neither
    shown nor kept."""

    temporary = forms.BooleanField(
        required=False, initial=True,
        help_text="The user must choose a new password at the next sign-in (required action UPDATE_PASSWORD).",
    )

    def save(self, commit=True):
        user = self.user
        password_policy.set_password(user, self.cleaned_data["new_password1"])
        actions = [a for a in user.required_actions if a != "UPDATE_PASSWORD"]
        if self.cleaned_data["temporary"]:
            actions.append("UPDATE_PASSWORD")
        user.required_actions = actions
        if commit:
            user.save()
        return user


class UserForm(forms.ModelForm):
    def clean_username(self):
        return self.cleaned_data["username"].lower()  # usernames are case-insensitive, as in Keycloak


@admin.register(User)
class UserAdmin(ConsoleAdmin):
    view_role, manage_role, list_role = "view-users", "manage-users", "query-users"
    form = UserForm
    list_display = ("username", "email", "first_name", "last_name", "enabled", "email_verified")
    list_filter = realm_owned_list_filter("enabled", "email_verified")
    search_fields = ("username", "email", "first_name", "last_name")
    filter_horizontal = ("roles", "groups")
    actions = ["enable_users", "disable_users"]
    line_list_fields = ("required_actions",)
    readonly_fields = ("id", "password_status", "service_account_client", "created")
    inlines = [CredentialInline]
    fieldsets = [
        (None, {"fields": ("realm", "username", "email", "email_verified", "first_name", "last_name", "enabled")}),
        ("Password", {"fields": ("password_status",)}),
        ("Role mapping (realm roles, and client roles as client:role)", {"fields": ("roles",)}),
        ("Groups", {"fields": ("groups",)}),
        ("Details", {"classes": ("collapse",), "fields": (
            "required_actions", "attributes", "federation_link", "service_account_client", "id", "created",
        )}),
    ]
    add_fieldsets = [(None, {"fields": ("realm", "username", "email", "email_verified", "first_name",
                                        "last_name", "enabled")})]

    def get_queryset(self, request):
        """The users the admin may view in the realms they administer (all with view-users;
        else those fine-grained permissions grant), as the Admin REST API lists them."""
        users = super().get_queryset(request)
        if request.user.is_superuser:
            return users
        admin = console_admin(request)
        visible = users.none()
        for realm in administered_realms(admin):
            visible |= visible_users(admin, realm, users.filter(realm=realm))
        return visible

    def get_fieldsets(self, request, obj=None):
        return self.add_fieldsets if obj is None else self.fieldsets

    def get_inlines(self, request, obj):
        return self.inlines if obj is not None else []

    @admin.display(description="Password")
    def password_status(self, obj):
        url = reverse("admin:realms_user_password", args=[obj.pk])
        label = "Reset password" if obj.has_usable_password() else "Set password"
        state = "A password is set." if obj.has_usable_password() else "No password."
        return format_html('{} <a class="button" href="{}">{}</a>', state, url, label)

    def mapping_snapshot(self, obj):
        groups = set(obj.groups.values_list("pk", flat=True)) if obj.pk else set()
        return {"roles": role_ids(obj), "groups": groups}

    def mapping_events(self, request, obj, before, after):
        role_mapping_events(request, obj.realm, f"users/{obj.pk}", before["roles"], after["roles"])
        for operation, changed in (("CREATE", after["groups"] - before["groups"]),
                                   ("DELETE", before["groups"] - after["groups"])):
            for group_id in sorted(changed):
                admin_event(request, obj.realm, operation, "GROUP_MEMBERSHIP", f"users/{obj.pk}/groups/{group_id}")

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        # Through the service every new user goes through: lower-cased name, the realm's default role.
        fields = {k: v for k, v in form.cleaned_data.items() if k not in ("realm", "username")}
        adopt(obj, create_user(obj.realm, obj.username, **fields))

    def response_add(self, request, obj, post_url_continue=None):
        # Like Keycloak, a new user is created without credentials; go on to the user's page.
        if "_addanother" not in request.POST and IS_POPUP_VAR not in request.POST:
            request.POST = request.POST.copy()
            request.POST["_continue"] = "1"
        return super().response_add(request, obj, post_url_continue)

    def get_urls(self):
        return [
            path("<path:object_id>/password/", self.admin_site.admin_view(self.set_password_view),
                 name="realms_user_password"),
            *super().get_urls(),
        ]

    def set_password_view(self, request, object_id):
        user = self.get_object(request, object_id)
        if user is None:
            raise Http404("No such user.")
        if not self.has_change_permission(request, user):
            raise PermissionDenied
        if request.method == "POST":
            form = UserPasswordForm(user, request.POST)
            if form.is_valid():
                try:
                    with transaction.atomic():
                        form.save()
                        admin_event(request, user.realm, "ACTION", "USER", f"users/{user.pk}/reset-password")
                        self.log_change(request, user, "Set password.")
                except password_policy.PasswordPolicyError as exc:
                    form.add_error("new_password1", str(exc))  # shown next to the field
                else:
                    update_session_auth_hash(request, user)  # keeps the admin signed in after their own change
                    self.message_user(request, "Password set.", messages.SUCCESS)
                    return HttpResponseRedirect(reverse("admin:realms_user_change", args=[user.pk]))
        else:
            form = UserPasswordForm(user)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Set password: {user.username}",
            "form": form,
            "adminform": admin.helpers.AdminForm(form, [(None, {"fields": list(form.base_fields)})], {}),
            "opts": self.opts,
            "original": user,
        }
        return TemplateResponse(request, "admin/realms/user/set_password.html", context)

    def _set_enabled(self, request, queryset, enabled):
        with transaction.atomic():
            for user in queryset.select_related("realm"):
                if user.enabled != enabled:
                    user.enabled = enabled
                    user.save(update_fields=["enabled"])
                    object_event(request, "UPDATE", user)

    @admin.action(description="Enable selected users")
    def enable_users(self, request, queryset):
        self._set_enabled(request, queryset, True)

    @admin.action(description="Disable selected users")
    def disable_users(self, request, queryset):
        self._set_enabled(request, queryset, False)
