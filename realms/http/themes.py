"""Themes, as Keycloak has them per realm: a login theme (``realm.login_theme``), an account
theme (``account_theme``) and an e-mail theme (``email_theme``). A theme is a folder of
templates, ``templates/<theme>/<page>`` for the login pages, ``<theme>/account/<page>`` and
``<theme>/email/<page>`` for the others, and its message bundles (``realms.http.messages``); whatever
a theme does not ship comes from the built-in ``v2`` theme, page by page and message by message."""
from urllib.parse import urlencode

from django.http import HttpResponse
from django.template.loader import select_template

from . import messages, security_headers
from .safe_html import safe_html

DEFAULT_THEME = "v2"
LOGIN, ACCOUNT, EMAIL = "login", "account", "email"
_FOLDERS = {LOGIN: "", ACCOUNT: "account/", EMAIL: "email/"}


def theme_of(realm, kind=LOGIN):
    return (getattr(realm, f"{kind}_theme", "") if realm is not None else "") or DEFAULT_THEME


def template(realm, page, kind=LOGIN):
    """The realm's theme's page of this kind, else the ``v2`` theme's."""
    theme = theme_of(realm, kind)
    names = [f"{t}/{_FOLDERS[kind]}{page}" for t in dict.fromkeys((theme, DEFAULT_THEME))]
    return select_template(names)


def _locale_links(request, realm, current):
    """The locale chooser's entries (each locale named in its own language), when the realm
    offers more than one."""
    supported = list(realm.supported_locales or ()) if realm is not None and realm.internationalization_enabled else []
    if len(supported) < 2 or request is None:
        return []
    query = request.GET.copy()
    links = []
    for locale in supported:
        query[messages.KC_LOCALE] = locale
        links.append({"locale": locale, "label": messages.text(realm, locale, f"locale_{locale}"),
                      "url": f"{request.path}?{urlencode(query, doseq=True)}", "current": locale == current})
    return links


def render(request, realm, page, context=None, status=200, kind=LOGIN):
    context = context or {}
    lang = messages.locale_for(request, realm, user=context.get("user"), auth_session=context.get("auth_session"))
    base = {
        "realm": realm,
        "realm_title": (realm.display_name or realm.name) if realm is not None else "",
        # The header: the realm's displayNameHtml (made safe) as Keycloak's login theme shows it.
        "realm_header": safe_html(realm.display_name_html) if realm is not None and realm.display_name_html else "",
        "lang": lang,
        "dir": messages.direction(lang),
        "theme": theme_of(realm, kind),
        "locales": _locale_links(request, realm, lang),
    }
    response = HttpResponse(template(realm, page, kind).render({**base, **context}, request), status=status)
    chosen = messages.chosen_locale(request, realm)
    if chosen:
        # Keycloak remembers a locale picked on a page for the next visits of this realm's pages.
        response.set_cookie(messages.LOCALE_COOKIE, chosen, path=f"/realms/{realm.name}/", httponly=True,
                            secure=request.is_secure(), samesite="Lax")
    # Pages hold CSRF tokens and per-sign-in state: never cache them anywhere.
    response["Cache-Control"] = "no-store, must-revalidate, max-age=0"
    # The realm's browserSecurityHeaders (CSP, X-Frame-Options, Referrer-Policy ...).
    return security_headers.apply(request, realm, response)
