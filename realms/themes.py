"""Login theme lookup: ``templates/<realm.login_theme>/<page>``, falling back to the default
``v2`` theme page by page, so a custom theme overrides only the pages it ships."""
from django.template.loader import select_template
from django.http import HttpResponse

from . import messages, security_headers

DEFAULT_THEME = "v2"


def render(request, realm, page, context=None, status=200):
    theme = (realm.login_theme if realm is not None else "") or DEFAULT_THEME
    names = [f"{theme}/{page}"] if theme == DEFAULT_THEME else [f"{theme}/{page}", f"{DEFAULT_THEME}/{page}"]
    template = select_template(names)
    base = {
        "realm": realm,
        "realm_title": (realm.display_name or realm.name) if realm is not None else "",
        "lang": messages.locale_for(request, realm),
    }
    response = HttpResponse(template.render({**base, **(context or {})}, request), status=status)
    # Sign-in pages hold CSRF tokens and per-sign-in state: never cache them anywhere.
    response["Cache-Control"] = "no-store, must-revalidate, max-age=0"
    # The realm's browserSecurityHeaders (CSP, X-Frame-Options, Referrer-Policy ...).
    return security_headers.apply(request, realm, response)
