"""Organizations (Keycloak 26), shown while the current realm has its "Organizations" switch on:
each in Keycloak's tabs (settings with its domains, attributes, members, identity providers),
and an "Invite by e-mail" page sending the invitation (``realms.users.organizations.invite``).
The "Identity providers" tab links the realm's providers (one may serve several organizations),
each with its domain and "redirect when e-mail domain matches" (``realms.brokering.organizations``).
Governed by ``manage-realm``, as the Admin API."""
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from ..audit.admin_events import console_auth, record
from ..brokering import admin as idp_admin
from ..brokering import organizations as org_idps
from ..models import Organization, OrganizationDomain, OrganizationIdentityProvider, OrganizationMember, User
from ..users import organizations
from .audit import admin_event
from .base import ConsoleAdmin, RealmScopedInline, realm_owned_list_filter
from .switcher import current_realm


class OrganizationForm(forms.ModelForm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["alias"].required = False
        self.fields["alias"].help_text = "Defaults to the name; it cannot be changed afterwards."
        if self.instance.pk:
            self.fields["alias"].disabled = True

    def clean(self):
        data = super().clean()
        if data.get("alias") and any(c.isspace() for c in data["alias"]) and "alias" in self.changed_data:
            self.add_error("alias", "Empty Space not allowed.")
        elif data.get("name") and not data.get("alias"):  # as Keycloak: the name, spaces and all
            data["alias"] = self.instance.alias = data["name"]
        return data


class DomainForm(forms.ModelForm):
    realm = None  # set by DomainInline.get_formset

    def clean_name(self):
        name = self.cleaned_data["name"].strip().lower()
        taken = OrganizationDomain.objects.filter(realm=self.realm, name=name)
        if self.instance.organization_id:
            taken = taken.exclude(organization_id=self.instance.organization_id)
        if taken.exists():
            raise ValidationError(f"Domain {name} is already linked to another organization in realm {self.realm.name}")
        return name


class DomainInline(RealmScopedInline):
    model = OrganizationDomain
    form = DomainForm
    fields = ("name", "verified")
    classes = ("tab-settings",)

    def get_formset(self, request, obj=None, **kwargs):
        formset = super().get_formset(request, obj, **kwargs)
        formset.form.realm = self.form_realm(request)
        return formset


class MemberInline(RealmScopedInline):
    model = OrganizationMember
    fields = ("user", "membership_type")
    autocomplete_fields = ("user",)  # a realm may hold too many users for one select
    classes = ("tab-members",)


class ProviderLinkForm(forms.ModelForm):
    """A provider serving the organization: the domain it is for (one of the organization's, or
    any of them) and whether a user of that domain goes straight to it."""

    domain = forms.ChoiceField(required=False, help_text="The e-mail domain this provider is for.")

    class Meta:
        model = OrganizationIdentityProvider
        fields = ("identity_provider", "domain", "redirect_when_email_matches")
        labels = {"identity_provider": "Identity provider",
                  "redirect_when_email_matches": "Redirect when email domain matches"}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        organization = self.organization
        names = list(organization.domains.values_list("name", flat=True)) if organization is not None else []
        held = self.instance.domain if self.instance.pk else ""
        if held and held not in names and held != organizations.ANY_DOMAIN:
            names.append(held)
        self.fields["domain"].choices = [("", "(none)"), (organizations.ANY_DOMAIN, "Any of its domains"),
                                         *((name, name) for name in names)]

    organization = None  # set by ProviderLinkInline.get_formset


class ProviderLinkInline(RealmScopedInline):
    model = OrganizationIdentityProvider
    form = ProviderLinkForm
    fields = ("identity_provider", "domain", "redirect_when_email_matches")
    classes = ("tab-identity-providers",)
    verbose_name, verbose_name_plural = "identity provider", "identity providers"

    def get_formset(self, request, obj=None, **kwargs):
        formset = super().get_formset(request, obj, **kwargs)
        formset.form.organization = obj if obj is not None and obj.pk else None
        return formset


class InviteForm(forms.Form):
    email = forms.EmailField()
    first_name = forms.CharField(required=False, label="First name")
    last_name = forms.CharField(required=False, label="Last name")


@admin.register(Organization)
class OrganizationAdmin(ConsoleAdmin):
    view_role, manage_role = "manage-realm", "manage-realm"
    form = OrganizationForm
    list_display = ("name", "alias", "enabled", "domain_names", "member_count")
    list_filter = realm_owned_list_filter()
    search_fields = ("name", "alias", "domains__name")
    tabs = (("settings", "Settings"), ("attributes", "Attributes"), ("members", "Members"),
            ("identity-providers", "Identity providers"))
    readonly_fields = ("invite",)
    inlines = [DomainInline, MemberInline, ProviderLinkInline]

    def get_fieldsets(self, request, obj=None):
        settings = ("realm", "name", "alias", "enabled", "description", "redirect_url")
        return ((None, {"classes": ("tab-settings",), "fields": settings + (("invite",) if obj is not None else ())}),
                ("Attributes", {"classes": ("tab-attributes",), "fields": ("attributes",)}))

    def save_formset(self, request, form, formset, change):
        if formset.model is not OrganizationIdentityProvider:
            return super().save_formset(request, form, formset, change)
        # Recorded as the Admin API records them: linking and unlinking on the organization's
        # identity-providers, a link's domain or redirect as an update of the provider.
        org, realm = form.instance, form.instance.realm
        formset.save(commit=False)
        for link in formset.deleted_objects:
            link.delete()
            admin_event(request, realm, "DELETE", "ORGANIZATION",
                        f"organizations/{org.pk}/identity-providers/{link.identity_provider.alias}")
        for link in formset.new_objects:
            link.organization = org
            link.save()
            admin_event(request, realm, "CREATE", "ORGANIZATION",
                        f"organizations/{org.pk}/identity-providers/{link.identity_provider.alias}")
        for link, _fields in formset.changed_objects:
            link.save()
            idp = link.identity_provider
            record(realm, "UPDATE", "IDENTITY_PROVIDER", f"identity-provider/instances/{idp.alias}",
                   auth=console_auth(request),
                   representation=lambda idp=idp: org_idps.with_organization(idp_admin.rep(idp), idp, org))
        return None

    @admin.display(description="")
    def invite(self, obj):
        return format_html('<a id="org-invite" href="{}">Invite by e-mail</a>',
                           reverse("admin:realms_organization_invite", args=[obj.pk]))

    def _switched_on(self, request, obj=None):
        realm = obj.realm if obj is not None else current_realm(request)
        return realm is not None and realm.organizations_enabled

    def has_module_permission(self, request):
        return super().has_module_permission(request) and self._switched_on(request)

    def may(self, request, role, obj=None):
        return self._switched_on(request, obj) and super().may(request, role, obj)

    @admin.display(description="domains")
    def domain_names(self, obj):
        return ", ".join(d.name for d in obj.domains.all())

    @admin.display(description="members")
    def member_count(self, obj):
        return obj.memberships.count()

    def get_urls(self):
        return [path("<path:object_id>/invite/", self.admin_site.admin_view(self.invite_view),
                     name="realms_organization_invite"), *super().get_urls()]

    def invite_view(self, request, object_id):
        org = self.get_object(request, object_id)
        if org is None:
            raise Http404("No such organization.")
        if not self.has_change_permission(request, org):
            raise PermissionDenied
        form = InviteForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            user = User.objects.filter(realm=org.realm, email__iexact=data["email"]).first()
            named = bool(data["first_name"] and data["last_name"])
            user = user or User(realm=org.realm, email=data["email"], attributes={},
                                first_name=data["first_name"] if named else "",
                                last_name=data["last_name"] if named else "")
            if not user._state.adding and organizations.membership(org, user.pk):
                form.add_error("email", "User already a member of the organization")
            else:
                try:
                    with transaction.atomic():
                        organizations.invite(org, user, request)
                        admin_event(request, org.realm, "ACTION", "ORGANIZATION_MEMBERSHIP",
                                    f"organizations/{org.pk}/members/invite-user")
                except organizations.InvitationNotSent:
                    form.add_error(None, "Failed to send invite email")
                else:
                    self.message_user(request, f"Invitation sent to {data['email']}.", messages.SUCCESS)
                    return HttpResponseRedirect(reverse("admin:realms_organization_change", args=[org.pk]))
        context = {**self.admin_site.each_context(request), "title": f"Invite to {org.name}", "form": form,
                   "opts": self.opts, "original": org,
                   "adminform": admin.helpers.AdminForm(form, [(None, {"fields": list(form.base_fields)})], {})}
        return TemplateResponse(request, "admin/realms/authenticationflow/tool.html", context)

    def delete_model(self, request, obj):
        # As the Admin API: the members the organization provisioned go with it.
        User.objects.filter(organization_memberships__organization=obj,
                            organization_memberships__membership_type=OrganizationMember.MANAGED).delete()
        super().delete_model(request, obj)

