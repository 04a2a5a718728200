"""The console's sign-in pages (docs/decisions/0063). The console has no password form: ``login``
sends the browser to sign in through a realm's browser flow (the master realm's, or with
``?realm=`` a realm's own, for its admins), ``sign_in`` starts that flow below the realm's path
(where the browser sends the realm's SSO and sign-in cookies), ``logout`` ends the console's
session and the SSO session. idp/urls.py routes ``login/`` and ``logout/`` here ahead of the
admin site's own."""
from urllib.parse import quote, urlencode

from django.contrib import admin
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST, require_safe

from ..administration import console_auth


def console_path(next_url):
    """``next_url`` when it is a page of the console, else the console's index: a sign-in never
    ends off-site."""
    index = reverse("admin:index")
    if next_url and next_url.startswith(index) and url_has_allowed_host_and_scheme(next_url, allowed_hosts=None):
        return next_url
    return index


@require_safe
def login(request):
    next_url = console_path(request.GET.get("next", ""))
    if request.user.is_authenticated and console_auth.session_alive(request):
        if admin.site.has_permission(request):
            return HttpResponseRedirect(next_url)
        # Signed in, but administers nothing: say so, with a way out, rather than sign in again.
        return TemplateResponse(request, "admin/console/no_access.html", {
            "site_header": admin.site.site_header, "site_title": admin.site.site_title,
            "title": "No realm to administer", "has_permission": False}, status=403)
    realm = request.GET.get("realm") or "master"
    return HttpResponseRedirect(f"/realms/{quote(realm, safe='')}/console-sign-in?{urlencode({'next': next_url})}")


@require_safe
def sign_in(request, realm):
    return console_auth.start(request, realm, console_path(request.GET.get("next", "")))


@require_POST
def logout(request):
    response = HttpResponseRedirect(reverse("admin:login"))
    realm = console_auth.sign_out(request, response)
    if realm is not None and not realm.is_master:  # back to their realm's sign-in
        response["Location"] += "?" + urlencode({"realm": realm.name})
    return response
