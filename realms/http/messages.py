"""Message bundles, as Keycloak themes have them: ``templates/<theme>/messages/messages_<locale>.properties``
(UTF-8, ``key=value``, ``{0}`` placeholders), looked up realm text first (the realm's
``localizationTexts``), then the realm's theme, then the built-in ``v2`` theme, each in the locale
and then in English; an unknown key shows itself, so a missing text is visible, never blank."""
import functools
import re
from pathlib import Path

from django.conf import settings

DEFAULT_THEME = "v2"
FALLBACK_LOCALE = "en"
_PLACEHOLDER = re.compile(r"\{(\d+)\}")


class Message:
    """A text chosen in Python and shown on a page: its key and arguments, translated by the
    page's ``{% msg %}`` in the page's locale."""

    def __init__(self, key, *args):
        self.key, self.args = key, args

    def __eq__(self, other):
        return isinstance(other, Message) and (self.key, self.args) == (other.key, other.args)

    def __repr__(self):
        return f"Message({self.key!r}, *{self.args!r})"


def _template_dirs():
    return [Path(d) for t in settings.TEMPLATES for d in t.get("DIRS", ())]


def _parse(path):
    entries, key, value = {}, None, []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip() if key is None else raw.lstrip()
        if key is None:
            if not line or line[0] in "#!":
                continue
            key, _, rest = line.partition("=")
            key, line = key.strip(), rest.lstrip()
        if line.endswith("\\"):
            value.append(line[:-1])
            continue
        value.append(line)
        # Java properties' \n escape (Keycloak's e-mail texts use it for their line breaks).
        entries[key] = "".join(value).replace("''", "'").replace("\\n", "\n")
        key, value = None, []
    return entries


@functools.lru_cache(maxsize=256)
def _bundle(theme, locale):
    found = {}
    for directory in _template_dirs():
        path = directory / theme / "messages" / f"messages_{locale}.properties"
        if path.is_file():
            found = {**_parse(path), **found}
    return found


def _chain(theme, locale):
    themes = [theme, DEFAULT_THEME] if theme and theme != DEFAULT_THEME else [DEFAULT_THEME]
    locales = [locale, FALLBACK_LOCALE] if locale and locale != FALLBACK_LOCALE else [FALLBACK_LOCALE]
    return [(t, loc) for loc in locales for t in themes]


LOCALE_COOKIE = "KEYCLOAK_LOCALE"
KC_LOCALE = "kc_locale"  # the query parameter of a locale chosen on a page
USER_REQUEST_LOCALE = "USER_REQUEST_LOCALE"  # auth-session note: that choice, for the sign-in's next pages
UI_LOCALES_NOTE = "ui_locales"  # auth-session note: the client's request (OIDC ui_locales)
RTL_LANGUAGES = frozenset({"ar", "fa", "he", "ur"})


def _split(tag):
    language, _, country = tag.replace("_", "-").partition("-")
    return language.lower(), country.upper()


def best_match(supported, *tags):
    """The supported locale that best matches the first of ``tags`` matching any (Keycloak's
    findBestMatchingLocale: same language, and the same country when both name one)."""
    for tag in tags:
        if not tag:
            continue
        language, country = _split(tag)
        found = None
        for candidate in supported:
            c_language, c_country = _split(candidate)
            if c_language != language or (country and c_country and country != c_country):
                continue
            if found is None or (c_country == country and _split(found)[1] != country):
                found = candidate
        if found is not None:
            return found
    return None


def _accept_language(header):
    ranked = []
    for position, part in enumerate(header.split(",")):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        if params.strip().startswith("q="):
            try:
                quality = float(params.strip()[2:])
            except ValueError:
                quality = 0.0
        if tag and tag != "*" and quality > 0:
            ranked.append((-quality, position, tag))
    return [tag for _, _, tag in sorted(ranked)]


def locale_for(request, realm, user=None, auth_session=None):
    """The locale a page is shown in, as Keycloak's DefaultLocaleSelectorProvider chooses it:
    English unless the realm's internationalization is on; then, among the realm's supported
    locales, the one chosen on the page (``kc_locale``, remembered for the sign-in), the user's
    ``locale`` attribute, the client's ``ui_locales``, the ``KEYCLOAK_LOCALE`` cookie,
    Accept-Language, and finally the realm's default locale."""
    if realm is None or not realm.internationalization_enabled:
        return FALLBACK_LOCALE
    supported = list(realm.supported_locales or ())
    notes = auth_session.notes if auth_session is not None else {}
    query = request.GET.get(KC_LOCALE, "") if request is not None else ""
    attribute = (user.attributes or {}).get("locale") if user is not None else None
    if isinstance(attribute, list):
        attribute = attribute[0] if attribute else None
    for tags in ([query], [notes.get(USER_REQUEST_LOCALE)], [attribute],
                 (notes.get(UI_LOCALES_NOTE) or "").split(),
                 [request.COOKIES.get(LOCALE_COOKIE, "") if request is not None else ""],
                 _accept_language(request.META.get("HTTP_ACCEPT_LANGUAGE", "")) if request is not None else []):
        found = best_match(supported, *tags)
        if found:
            return found
    return realm.default_locale or FALLBACK_LOCALE


def chosen_locale(request, realm):
    """The supported locale the request's ``kc_locale`` names, or None."""
    if request is None or realm is None or not realm.internationalization_enabled:
        return None
    return best_match(list(realm.supported_locales or ()), request.GET.get(KC_LOCALE, ""))


def direction(locale):
    return "rtl" if _split(locale)[0] in RTL_LANGUAGES else "ltr"


def text(realm, locale, key, *args, theme=None):
    """The message ``key`` in ``locale`` with ``{0}``, ``{1}``... replaced by ``args``."""
    message = None
    if realm is not None:
        overrides = realm.localization_texts or {}
        for loc in (locale, FALLBACK_LOCALE):
            message = (overrides.get(loc) or {}).get(key)
            if message is not None:
                break
        theme = theme or realm.login_theme
    if message is None:
        for pair in _chain(theme or DEFAULT_THEME, locale):
            message = _bundle(*pair).get(key)
            if message is not None:
                break
    if message is None:
        return key
    return _PLACEHOLDER.sub(lambda m: str(args[int(m.group(1))]) if int(m.group(1)) < len(args) else m.group(0),
                            message)


def display(realm, locale, name, theme=None):
    """A name as people read it: one written ``${key}`` (Keycloak's built-in clients are named
    ``${client_account}``, roles described ``${role_offline-access}``) is the message ``key``, as
    Keycloak's themes resolve it; any other name is shown as written."""
    if name and name.startswith("${") and name.endswith("}"):
        return text(realm, locale, name[2:-1], theme=theme)
    return name


def available_locales(theme=DEFAULT_THEME):
    """The locales the theme (with ``v2`` beneath it) has a message bundle for, English first."""
    found = set()
    for directory in _template_dirs():
        for t in {theme, DEFAULT_THEME}:
            found.update(p.stem.removeprefix("messages_") for p in (directory / t / "messages").glob("messages_*.properties"))
    return sorted(found, key=lambda tag: (tag != FALLBACK_LOCALE, tag))
