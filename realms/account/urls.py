"""``/realms/<realm>/account/...``: the Account REST API for callers that ask for JSON (an
``Accept`` or ``Content-Type`` of application/json, as Keycloak's AccountLoader decides), the
account console's pages for browsers."""
from django.http import HttpResponse
from django.urls import path
from django.views.generic import RedirectView

from ..http import cors
from . import api, console

METHODS = ("GET", "POST", "PUT", "DELETE", "OPTIONS")


def either(api_view, page=None):
    """One path, two answers: JSON for API callers, the console page (or a 404) for browsers."""
    def view(request, *args, **kwargs):
        if request.method == "OPTIONS":  # a CORS preflight (Keycloak's CorsPreflightService)
            return cors.preflight(request, HttpResponse(), METHODS)
        wants_json = ("application/json" in request.META.get("HTTP_ACCEPT", "")
                      or request.content_type == "application/json")
        if wants_json or page is None:
            return api_view(request, *args, **kwargs)
        return page(request, *args, **kwargs)
    view.csrf_exempt = True  # the API is bearer-token only; the console's own forms are checked (console.py)
    return view


# ``/realms/<realm>/account`` without its slash (mounted by idp/urls.py) is Keycloak's account
# resource too: keycloak-js's loadUserProfile() asks it across origins with a bearer token, and a
# browser refuses a redirected preflight. A browser asking for the page is sent to ``account/``,
# where the console's relative links work.
account_root = either(api.Account.as_view(), RedirectView.as_view(url="account/", query_string=True))


urlpatterns = [
    path("", either(api.Account.as_view(), console.personal_info), name="account"),
    path("credentials", either(api.Credentials.as_view())),
    path("credentials/<str:credential_id>", either(api.CredentialDetail.as_view())),
    path("sessions", either(api.Sessions.as_view())),
    path("sessions/devices", either(api.Devices.as_view())),
    path("sessions/<str:session_id>", either(api.SessionDetail.as_view())),
    path("applications", either(api.Applications.as_view(), console.applications), name="account-applications"),
    path("applications/<str:client_id>/consent", either(api.ApplicationConsent.as_view())),
    path("linked-accounts", either(api.LinkedAccounts.as_view())),
    path("linked-accounts/<str:alias>", either(api.LinkedAccount.as_view())),
    path("groups", either(api.Groups.as_view(), console.groups), name="account-groups"),
    path("organizations", either(api.Organizations.as_view(), console.organizations), name="account-organizations"),
    path("resources", either(api.Resources.as_view(), console.resources), name="account-resources"),
    path("resources/shared-with-me", either(api.SharedWithMe.as_view())),
    path("resources/shared-with-others", either(api.SharedWithOthers.as_view())),
    path("resources/pending-requests", either(api.PendingRequests.as_view())),
    path("resources/<str:resource_id>", either(api.ResourceDetail.as_view())),
    path("resources/<str:resource_id>/permissions", either(api.ResourcePermissions.as_view())),
    path("resources/<str:resource_id>/permissions/requests", either(api.ResourcePermissionRequests.as_view())),
    path("resources/<str:resource_id>/user", either(api.ResourceUser.as_view())),
    path("supportedLocales", either(api.SupportedLocales.as_view())),
    path("account-security/signing-in", console.signing_in, name="account-signing-in"),
    path("account-security/device-activity", console.device_activity, name="account-device-activity"),
    path("account-security/linked-accounts", console.linked_accounts, name="account-linked-accounts"),
]
