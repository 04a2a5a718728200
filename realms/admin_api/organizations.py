"""``/admin/realms/{realm}/organizations`` (Keycloak 26's OrganizationsResource, OrganizationResource
and OrganizationMemberResource): CRUD with ``count`` and search, members (list, count, add by id,
get, remove, their organizations), the invitations by e-mail and the organization's identity
providers (Keycloak's OrganizationIdentityProvidersResource: link by alias, list, read, unlink;
their domain and redirect are the provider's ``kc.org.*`` config keys, set by a PUT on the
provider, ``realms.brokering.organizations``). Every route needs
``manage-realm`` and then the realm's ``organizationsEnabled`` (404 "Organizations not enabled
for this realm." without it), in that order, as in Keycloak."""
from django.db import transaction
from django.db.models import Q
from rest_framework import exceptions, status
from rest_framework.parsers import FormParser
from rest_framework.response import Response

from ..audit import admin_events
from ..brokering import admin as idp_admin
from ..brokering import organizations as org_idps
from ..models import IdentityProvider, Organization, OrganizationMember, User
from ..representation.users import user_fields_rep
from ..users import organizations
from . import errors
from .email import ServerError
from .query import flag, location, page
from .views import RealmResource

ORGANIZATION, MEMBERSHIP = "ORGANIZATION", "ORGANIZATION_MEMBERSHIP"


class Missing(errors.Invalid):
    """404 ``{"errorMessage": message}``: Keycloak's ErrorResponse with NOT_FOUND."""

    status_code = status.HTTP_404_NOT_FOUND


class OrganizationResource(RealmResource):
    required_role = "manage-realm"

    def check_permissions(self, request):
        super().check_permissions(request)
        if not self.realm.organizations_enabled:
            raise Missing("Organizations not enabled for this realm.")

    def organization(self):
        org = self.row(Organization, self.kwargs["org_id"])
        if org is None:
            raise Missing("Organization not found.")
        return org

    def record(self, operation, resource_type, path, representation=None, details=None):
        admin_events.record(self.realm, operation, resource_type, path, auth=self.auth_details(),
                            representation=representation, details=details)


def _apply(realm, data, org=None):
    try:
        return organizations.apply(realm, data, org)
    except organizations.OrganizationError as exc:
        raise (errors.Conflict if exc.conflict else errors.Invalid)(str(exc)) from None


def _matching(view, request):
    query = organizations.parse_query(request.query_params.get("q"))
    return organizations.search(view.realm, request.query_params.get("search"), flag(request, "exact", False), query)


class Organizations(OrganizationResource):
    def get(self, request, realm):
        brief = flag(request, "briefRepresentation", True)
        orgs = page(request, _matching(self, request).prefetch_related("domains"), default_max=10)
        return Response([organizations.rep(o, brief) for o in orgs])

    def post(self, request, realm):
        with transaction.atomic():
            org = _apply(self.realm, {k: v for k, v in request.data.items() if k != "id"}
                         if isinstance(request.data, dict) else request.data)
            self.record("CREATE", ORGANIZATION, f"organizations/{org.pk}", lambda: organizations.rep(org, False))
        return Response(status=status.HTTP_201_CREATED,
                        headers={"Location": location(request, f"{self.realm.name}/organizations/{org.pk}")})


class OrganizationCount(OrganizationResource):
    def get(self, request, realm):
        return Response(_matching(self, request).count())


class OrganizationDetail(OrganizationResource):
    def get(self, request, realm, org_id):
        return Response(organizations.rep(self.organization(), brief=False))

    def put(self, request, realm, org_id):
        org = self.organization()
        with transaction.atomic():
            _apply(self.realm, request.data, org)
            self.record("UPDATE", ORGANIZATION, f"organizations/{org.pk}", lambda: organizations.rep(org, False))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def delete(self, request, realm, org_id):
        org = self.organization()
        with transaction.atomic():
            # Managed members belong to the organization and go with it (Keycloak removes them).
            User.objects.filter(organization_memberships__organization=org,
                                organization_memberships__membership_type=OrganizationMember.MANAGED).delete()
            org.delete()
            self.record("DELETE", ORGANIZATION, f"organizations/{org_id}")
        return Response(status=status.HTTP_204_NO_CONTENT)


def member_rep(member):
    """Keycloak's MemberRepresentation: the user with its ``membershipType``."""
    return {**user_fields_rep(member.user), "membershipType": member.membership_type}


class Members(OrganizationResource):

    def get(self, request, realm, org_id):
        members = OrganizationMember.objects.filter(organization=self.organization()).select_related("user")
        text = request.query_params.get("search")
        if text:
            lookup = "iexact" if flag(request, "exact", False) else "icontains"
            members = members.filter(Q(**{f"user__username__{lookup}": text}) | Q(**{f"user__email__{lookup}": text})
                                     | Q(**{f"user__first_name__{lookup}": text})
                                     | Q(**{f"user__last_name__{lookup}": text}))
        kind = request.query_params.get("membershipType")
        if kind:
            if kind.upper() not in (OrganizationMember.MANAGED, OrganizationMember.UNMANAGED):
                raise errors.Invalid("Invalid value for membershipType")
            members = members.filter(membership_type=kind.upper())
        return Response([member_rep(m) for m in page(request, members.order_by("user__username"), default_max=10)])

    def post(self, request, realm, org_id):
        org = self.organization()
        # The body is the user's id, as a JSON string or bare (Keycloak accepts both).
        user_id = request.body.decode("utf-8", "replace").strip().strip('"')
        user = self.row(User, user_id) if user_id else None
        if user is None:
            raise errors.Invalid("User does not exist")
        with transaction.atomic():
            if not organizations.add_member(org, user):
                raise errors.Conflict("User is already a member of the organization.")
            self.record("CREATE", MEMBERSHIP, f"organizations/{org.pk}/members", lambda: organizations.rep(org, False),
                        details={"username": user.username, "email": user.email})
        member_path = f"{self.realm.name}/organizations/{org.pk}/members/{user.pk}"
        return Response(status=status.HTTP_201_CREATED, headers={"Location": location(request, member_path)})


class MemberCount(OrganizationResource):
    def get(self, request, realm, org_id):
        return Response(OrganizationMember.objects.filter(organization=self.organization()).count())


class MemberDetail(OrganizationResource):
    def member(self):
        member = organizations.membership(self.organization(), self.kwargs["member_id"])
        if member is None:
            raise exceptions.NotFound()  # Keycloak's bare NotFoundException
        return member

    def get(self, request, realm, org_id, member_id):
        return Response(member_rep(self.member()))

    def delete(self, request, realm, org_id, member_id):
        member = self.member()
        org, user = member.organization, member.user
        with transaction.atomic():
            organizations.remove_member(member)
            self.record("DELETE", MEMBERSHIP, f"organizations/{org.pk}/members/{member_id}",
                        details={"username": user.username, "email": user.email})
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemberOrganizations(OrganizationResource):
    """``members/{member-id}/organizations``, below an organization or not: every organization of
    the user (404 when no such user)."""

    def get(self, request, realm, member_id, org_id=None):
        if org_id is not None:
            self.organization()
        user = self.row(User, member_id)
        if user is None:
            raise exceptions.NotFound()
        brief = flag(request, "briefRepresentation", True)
        return Response([organizations.rep(o, brief) for o in organizations.of_user(user).prefetch_related("domains")])


class Invite(OrganizationResource):
    """``members/invite-user`` (form ``email``, ``firstName``, ``lastName``: an existing user by
    that address is invited to sign in and join, anyone else to register) and
    ``members/invite-existing-user`` (form ``id``)."""

    parser_classes = (FormParser,)
    existing = False

    def post(self, request, realm, org_id):
        org = self.organization()
        form = request.data
        if self.existing:
            user_id = (form.get("id") or "").strip()
            if not user_id:
                raise errors.BadRequest("To invite a member you need to provide the user id")
            user = self.row(User, user_id)
            if user is None:
                raise errors.Invalid("User does not exist")
        else:
            address = (form.get("email") or "").strip()
            if not address:
                raise errors.Invalid("To invite a member you need to provide an email and/or username")
            user = User.objects.filter(realm=self.realm, email__iexact=address).first()
            if user is None:
                first, last = form.get("firstName") or "", form.get("lastName") or ""
                named = bool(first and last)  # Keycloak greets by name only when given both
                user = User(realm=self.realm, email=address, attributes={},
                            first_name=first if named else "", last_name=last if named else "")
        if user.pk and not user._state.adding and organizations.membership(org, user.pk):
            raise errors.Conflict("User already a member of the organization")
        with transaction.atomic():
            try:
                organizations.invite(org, user, request)
            except organizations.InvitationNotSent:
                raise ServerError("Failed to send invite email") from None
            path = "invite-existing-user" if self.existing else "invite-user"
            self.record("ACTION", MEMBERSHIP, f"organizations/{org.pk}/members/{path}")
        return Response(status=status.HTTP_204_NO_CONTENT)


class IdentityProviders(OrganizationResource):
    """``identity-providers``: the organization's providers (IdentityProviderRepresentations seen
    from it), and POST whose body is a provider's alias or internal id as a JSON string (or bare,
    as Keycloak trims the quotes) to link it (204)."""

    def get(self, request, realm, org_id):
        org = self.organization()
        return Response([org_idps.with_organization(idp_admin.rep(found.identity_provider), found.identity_provider, org)
                         for found in org_idps.links(org)])

    def post(self, request, realm, org_id):
        org = self.organization()
        key = request.body.decode("utf-8", "replace").strip().strip('"').strip()
        idp = IdentityProvider.objects.filter(realm=self.realm).filter(Q(alias=key) | Q(internal_id=key)).first() \
            if key else None
        if idp is None:
            raise errors.Invalid("Identity provider not found with the given alias")
        with transaction.atomic():
            try:
                org_idps.link(org, idp)
            except organizations.OrganizationError as exc:
                raise (errors.Conflict if exc.conflict else errors.Invalid)(str(exc)) from None
            self.record("CREATE", ORGANIZATION, f"organizations/{org.pk}/identity-providers/{idp.alias}",
                        lambda: org_idps.with_organization(idp_admin.rep(idp), idp, org))
        return Response(status=status.HTTP_204_NO_CONTENT)


class IdentityProviderDetail(OrganizationResource):
    """``identity-providers/{alias}``: one of the organization's providers, or unlinked (the
    provider itself stays in the realm)."""

    def linked(self, message):
        org = self.organization()
        idp = IdentityProvider.objects.filter(realm=self.realm, alias=self.kwargs["alias"]).first()
        if idp is None or org_idps.link_of(org, idp) is None:
            raise Missing(message)
        return org, idp

    def get(self, request, realm, org_id, alias):
        org, idp = self.linked("Identity provider not associated with the organization")
        return Response(org_idps.with_organization(idp_admin.rep(idp), idp, org))

    def delete(self, request, realm, org_id, alias):
        org, idp = self.linked("Identity provider not found with the given alias")
        with transaction.atomic():
            org_idps.unlink(org, idp)
            self.record("DELETE", ORGANIZATION, f"organizations/{org.pk}/identity-providers/{idp.alias}")
        return Response(status=status.HTTP_204_NO_CONTENT)
