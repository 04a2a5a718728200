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


def locale_for(request, realm):
    """The locale a page is shown in: the realm's default locale, else English."""
    return (realm.default_locale if realm is not None and realm.default_locale else "") or FALLBACK_LOCALE


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


def available_locales(theme=DEFAULT_THEME):
    """The locales the theme (with ``v2`` beneath it) has a message bundle for, English first."""
    found = set()
    for directory in _template_dirs():
        for t in {theme, DEFAULT_THEME}:
            found.update(p.stem.removeprefix("messages_") for p in (directory / t / "messages").glob("messages_*.properties"))
    return sorted(found, key=lambda tag: (tag != FALLBACK_LOCALE, tag))
