"""Users, in Keycloak's tabs: details, credentials (listed, never shown; removable; set a password;
reset OTP), role mapping (with the effective roles), groups, consents (revocable), identity
provider links (unlinkable), sessions (sign out one or all); impersonation; enabling and disabling."""
from django import forms
from django.contrib import admin, messages
from django.contrib.admin.options import IS_POPUP_VAR
from django.contrib.auth import update_session_auth_hash
from django.contrib.auth.forms import SetPasswordForm
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from ..audit.admin_events import enabled_change
from ..credentials import password_policy
from ..errors import RealmsError, StoreRefused
from ..models import Client, Credential, FederatedIdentity, User, UserSession, effective_roles
from ..signin import engine
from ..sso import impersonation, sessions
from ..users import consents, storage
from ..users.accounts import create_user
from .audit import admin_event, object_event, role_ids, role_mapping_events
from .base import ConsoleAdmin, adopt, realm_owned_list_filter
from .names import required_action_names, resolved, time_column, when
from .sessions import back, logout_all_button, post_button, sessions_table
from .user_idp_links import FederatedIdentityInline, available, unlink
from .user_idp_links import urls as link_urls


class CredentialInline(admin.TabularInline):
    classes = ("tab-credentials",)
    """Credentials by type and date only; the secret is never shown. Deleting one is allowed
    (a lost authenticator); a password is set through "Set password"."""

    model = Credential
    fields = readonly_fields = ("type", "user_label", "priority", "created_at")
    created_at = time_column("created", "Created", realm=lambda credential: credential.user.realm)
    extra = 0
    can_delete = True

    def has_add_permission(self, request, obj=None):
        return False


class UserPasswordForm(SetPasswordForm):
    """Sets the password in the user's store (``storage.set_password``: the realm's policy and a
    hash, or a writable directory; refused with Keycloak's message or the directory's); the raw
    value is neither shown nor kept."""

    temporary = forms.BooleanField(
        required=False, initial=True,
        help_text="The user must choose a new password at the next sign-in (required action UPDATE_PASSWORD).",
    )

    def save(self, commit=True):
        user = self.user
        storage.set_password(user.realm, user, self.cleaned_data["new_password1"])
        actions = [a for a in user.required_actions if a != "UPDATE_PASSWORD"]
        if self.cleaned_data["temporary"]:
            actions.append("UPDATE_PASSWORD")
        user.required_actions = actions
        if commit:
            user.save()
        return user


class UserForm(forms.ModelForm):
    required_actions = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple,
        choices=lambda: [(a, a) for a in engine.provider_ids()["required-action"]],
        help_text="Asked at the next sign-in.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        field = self.fields.get("required_actions")
        if field is not None:  # by display name; an imported action this server does not know is kept, by its id
            names = required_action_names(self.instance.realm if self.instance.realm_id else None)
            ids = [value for value, _ in field.choices]
            ids += [a for a in self.instance.required_actions if a not in ids]
            field.choices = [(a, names.get(a, a)) for a in ids]

    def clean_username(self):
        return self.cleaned_data["username"].lower()  # usernames are case-insensitive, as in Keycloak


def _refusal(exc):
    """Why a user's store refused (its own words) or could not be reached."""
    return exc.detail if isinstance(exc, StoreRefused) else "could not reach the user's directory"


class UsersKept(RealmsError):
    """A bulk delete kept the users whose store refused (``kept``: each with why) and deleted the
    others (``deleted``: how many)."""

    def __init__(self, kept, deleted):
        super().__init__(kept, deleted)
        self.kept, self.deleted = kept, deleted


@admin.register(User)
class UserAdmin(ConsoleAdmin):
    view_role, manage_role, list_role = "view-users", "manage-users", "query-users"
    form = UserForm
    list_display = ("username", "email", "first_name", "last_name", "enabled", "email_verified")
    list_filter = realm_owned_list_filter("enabled", "email_verified")
    search_fields = ("username", "email", "first_name", "last_name")
    filter_horizontal = ("roles", "groups")
    actions = ["enable_users", "disable_users"]
    readonly_fields = ("id", "password_status", "password_state", "service_account_client", "federation_link",
                       "created_at", "impersonate", "otp_status", "effective_role_list", "consent_list",
                       "available_providers", "sessions", "logout")
    created_at = time_column("created", "Created")
    inlines = [CredentialInline, FederatedIdentityInline]
    tabs = (("details", "Details"), ("credentials", "Credentials"), ("role-mapping", "Role mapping"),
            ("groups", "Groups"), ("consents", "Consents"), ("identity-provider-links", "Identity provider links"),
            ("sessions", "Sessions"))
    fieldsets = [
        (None, {"classes": ("tab-details",), "fields": (
            "realm", "username", "email", "email_verified", "first_name", "last_name", "enabled", "impersonate",
            "required_actions", "attributes", "service_account_client", "federation_link", "id", "created_at")}),
        ("Password", {"classes": ("tab-credentials",), "fields": ("password_status", "otp_status")}),
        ("Assigned roles (realm roles, and client roles as client:role)", {"classes": ("tab-role-mapping",),
                                                                           "fields": ("roles",)}),
        ("Effective roles (assigned, through groups, and inside composites)", {"classes": ("tab-role-mapping",),
                                                                               "fields": ("effective_role_list",)}),
        ("Groups", {"classes": ("tab-groups",), "fields": ("groups",)}),
        ("Consents", {"classes": ("tab-consents",), "fields": ("consent_list",)}),
        ("Sessions", {"classes": ("tab-sessions",), "fields": ("sessions", "logout")}),
    ]
    add_fieldsets = [(None, {"fields": ("realm", "username", "email", "email_verified", "first_name",
                                        "last_name", "enabled")})]

    def get_fieldsets(self, request, obj=None):
        if obj is None:
            return self.add_fieldsets
        fieldsets = self.fieldsets
        if not self.may_reset_password(request, obj):
            # The password's state without its button, as Keycloak's console without access.resetPassword.
            fieldsets = [(name, {**opts, "fields": tuple("password_state" if f == "password_status" else f
                                                         for f in opts["fields"])}) for name, opts in fieldsets]
        if not self.has_change_permission(request, obj):
            return fieldsets
        # "Link account" for the realm's other providers, to an admin who may change the user.
        return [*fieldsets[:-1], ("Available identity providers", {
            "classes": ("tab-identity-provider-links",), "fields": ("available_providers",)}), fieldsets[-1]]

    def may_reset_password(self, request, user):
        """Keycloak 26.4's canResetPassword: ``manage-users``, else the user's ``reset-password``
        (its ``manage`` where no permission with ``reset-password`` applies)."""
        return self.may(request, ("Users", "reset-password"), user)

    def _button(self, obj, name, label, tab, **kwargs):
        return post_button(reverse(f"admin:realms_user_{name}", args=[obj.pk]) + f"?tab={tab}", label, **kwargs)

    @admin.display(description="Impersonate")
    def impersonate(self, obj):
        return format_html("{} Opens the account console of realm {} signed in as this user.",
                           self._button(obj, "impersonate", "Impersonate", "details", confirm=(
                               f"Impersonate {obj.username}? This browser is then signed in to realm "
                               f"{obj.realm.name} as this user.")), obj.realm.name)

    @admin.display(description="One-time codes")
    def otp_status(self, obj):
        count = obj.credentials.filter(type=Credential.OTP).count()
        if not count:
            return "No one-time-code device."
        return format_html("{} device(s). {}", count, self._button(
            obj, "reset_otp", "Reset OTP", "credentials", danger=True,
            confirm="Remove the one-time-code devices? The user sets up a new one at the next sign-in."))

    @admin.display(description="Effective roles")
    def effective_role_list(self, obj):
        names = sorted((f"{r.client.client_id}:{r.name}" if r.client_id else r.name, r.description)
                       for r in effective_roles(obj))
        if not names:
            return "None."
        return format_html('<table class="console-table"><thead><tr><th>Role</th><th>Description</th></tr></thead>'
                           "<tbody>{}</tbody></table>", format_html_join(
                               "", "<tr><td>{}</td><td>{}</td></tr>",
                               ((name, resolved(obj.realm, description)) for name, description in names)))

    @admin.display(description="Consents")
    def consent_list(self, obj):
        granted = consents.user_consents(obj)
        if not granted:
            return "No consents."
        return format_html(
            '<table class="console-table"><thead><tr><th>Client</th><th>Granted client scopes</th><th>Created</th>'
            "<th>Last updated</th><th></th></tr></thead><tbody>{}</tbody></table>", format_html_join(
                "", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                ((resolved(obj.realm, c.client.name) or c.client.client_id, ", ".join(c.scope_names),
                  when(c.created, obj.realm), when(c.updated, obj.realm),
                  post_button(reverse("admin:realms_user_revoke_consent", args=[obj.pk, c.client.pk]) + "?tab=consents",
                              "Revoke", danger=True))
                 for c in granted)))

    @admin.display(description="Sessions")
    def sessions(self, obj):
        return sessions_table(UserSession.objects.filter(user=obj))

    @admin.display(description="Sign out")
    def logout(self, obj):
        return logout_all_button(reverse("admin:realms_user_logout", args=[obj.pk]) + "?tab=sessions",
                                 "Sign out all sessions")

    def get_inlines(self, request, obj):
        return self.inlines if obj is not None else []

    def save_formset(self, request, form, formset, change):
        if formset.model is not FederatedIdentity:
            return super().save_formset(request, form, formset, change)
        unlink(request, form.instance, formset)  # as the Admin API unlinks: with its admin event
        return None

    @admin.display(description="Link account")
    def available_providers(self, obj):
        return available(obj) if obj.pk else "-"

    @admin.display(description="Password")
    def password_state(self, obj):
        return "A password is set." if obj.has_usable_password() else "No password."

    @admin.display(description="Password")
    def password_status(self, obj):
        url = reverse("admin:realms_user_password", args=[obj.pk])
        label = "Reset password" if obj.has_usable_password() else "Set password"
        return format_html('{} <a class="button" href="{}">{}</a>', self.password_state(obj), url, label)

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
            request._console_enabled_before = form.initial.get("enabled", obj.enabled)
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

    def change_event(self, request, operation, obj):
        before = getattr(request, "_console_enabled_before", obj.enabled)
        object_event(request, operation, obj, enabled_change(before, obj.enabled))

    # Deleting: through the user's store (storage.delete_user), as the Admin API and SCIM delete,
    # so that a WRITABLE directory's entry goes too and the next sync does not bring the user back.
    def log_deletions(self, request, queryset):
        pass  # delete_model logs each user it deleted; Django would log them before, refused or not

    def delete_model(self, request, obj):
        with transaction.atomic():
            super().log_deletions(request, [obj])
            self.change_event(request, "DELETE", obj)
            storage.delete_user(obj.realm, obj)

    def delete_view(self, request, object_id, extra_context=None):
        try:
            return super().delete_view(request, object_id, extra_context)
        except (StoreRefused, storage.Unavailable) as exc:
            self.message_user(request, f"The user was not deleted: {_refusal(exc)}", messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def delete_queryset(self, request, queryset):
        """One user at a time, as Keycloak's console deletes the selected users: a user whose store
        refuses is kept, the others go."""
        kept, deleted = [], 0
        for user in queryset.select_related("realm"):
            try:
                self.delete_model(request, user)
                deleted += 1
            except (StoreRefused, storage.Unavailable) as exc:
                kept.append(f"{user.username} ({_refusal(exc)})")
        if kept:
            raise UsersKept(kept, deleted)  # instead of Django's "Successfully deleted" all of them

    def response_action(self, request, queryset):
        try:
            return super().response_action(request, queryset)
        except UsersKept as exc:
            self.message_user(request, f"Deleted {exc.deleted} of the selected users. Not deleted: "
                                       f"{'; '.join(exc.kept)}.", messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def get_urls(self):
        return [
            path("<path:object_id>/password/", self.admin_site.admin_view(self.set_password_view),
                 name="realms_user_password"),
            path("<path:object_id>/logout/", self.admin_site.admin_view(self.logout_view), name="realms_user_logout"),
            path("<path:object_id>/impersonate/", self.admin_site.admin_view(self.impersonate_view),
                 name="realms_user_impersonate"),
            path("<path:object_id>/reset-otp/", self.admin_site.admin_view(self.reset_otp_view),
                 name="realms_user_reset_otp"),
            path("<path:object_id>/consents/<str:client_pk>/revoke/", self.admin_site.admin_view(
                self.revoke_consent_view), name="realms_user_revoke_consent"),
            *link_urls(self),
            *super().get_urls(),
        ]

    def _posted_user(self, request, object_id):
        """The user a button of the user's page posted for, once the admin may change it."""
        if request.method != "POST":
            raise PermissionDenied
        user = self.get_object(request, object_id)
        if user is None:
            raise Http404("No such user.")
        if not self.has_change_permission(request, user):
            raise PermissionDenied
        return user

    def _back(self, request, user):
        return back(request, reverse("admin:realms_user_change", args=[user.pk]))

    def logout_view(self, request, object_id):
        """Keycloak's user "Sign out" (``users/{id}/logout``): sessions end, tokens before now refused."""
        user = self._posted_user(request, object_id)
        with transaction.atomic():
            sessions.logout_user(user)
            admin_event(request, user.realm, "ACTION", "USER", f"users/{user.pk}/logout")
        self.message_user(request, f"Signed out every session of {user.username}.", messages.SUCCESS)
        return self._back(request, user)

    def reset_otp_view(self, request, object_id):
        """Removes the user's one-time-code devices and asks for a new one (``CONFIGURE_TOTP``)."""
        user = self._posted_user(request, object_id)
        with transaction.atomic():
            for credential in user.credentials.filter(type=Credential.OTP):
                admin_event(request, user.realm, "DELETE", "USER", f"users/{user.pk}/credentials/{credential.pk}")
                credential.delete()
            if "CONFIGURE_TOTP" not in user.required_actions:
                user.required_actions = [*user.required_actions, "CONFIGURE_TOTP"]
                user.save(update_fields=["required_actions"])
            object_event(request, "UPDATE", user)
        self.message_user(request, f"One-time-code devices of {user.username} removed; a new one is set up at the "
                                   f"next sign-in.", messages.SUCCESS)
        return self._back(request, user)

    def revoke_consent_view(self, request, object_id, client_pk):
        user = self._posted_user(request, object_id)
        client = get_object_or_404(Client, realm=user.realm, pk=client_pk)
        with transaction.atomic():
            if consents.revoke_consent(user, client):
                admin_event(request, user.realm, "DELETE", "USER", f"users/{user.pk}/consents/{client.client_id}")
        self.message_user(request, f"Consent of {user.username} to {client.client_id} revoked.", messages.SUCCESS)
        return self._back(request, user)

    def impersonate_view(self, request, object_id):
        """Signs this browser in as the user in the user's realm and opens its account console."""
        user = self._posted_user(request, object_id)
        try:
            user_session = impersonation.impersonate(request, user, request.user)
        except impersonation.ImpersonationRefused as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return self._back(request, user)
        response = HttpResponseRedirect(impersonation.account_url(user.realm))
        return impersonation.set_session_cookie(response, request, user_session)

    def set_password_view(self, request, object_id):
        user = self.get_object(request, object_id)
        if user is None:
            raise Http404("No such user.")
        if not self.may_reset_password(request, user):
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
                except storage.Unavailable:
                    form.add_error(None, "The user's directory could not be reached; the password is unchanged.")
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
