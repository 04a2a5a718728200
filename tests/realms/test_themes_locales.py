"""Themes and locales (docs/decisions/0028): every text a page or the code names is in the
English bundle and the German one is complete; the locale is chosen as Keycloak's
DefaultLocaleSelectorProvider does; login and account themes inherit from v2 page by page and
message by message; Arabic pages are right to left."""
import re
from pathlib import Path

import pytest

from realms.http import messages, themes
from realms.models import Realm, User
from realms.sso.auth_sessions import AuthSession

ROOT = Path(__file__).resolve().parents[2]


def _keys(name):
    return set(messages._parse(ROOT / "templates" / "v2" / "messages" / name))


def test_every_key_the_pages_and_the_code_name_is_in_english_and_german_and_arabic_are_complete():
    used = set()
    for path in (ROOT / "templates" / "v2").rglob("*.html"):
        used |= set(re.findall(r'{% msg "([^"]+)"(?!\|)', path.read_text(encoding="utf-8")))
    for path in [*(ROOT / "realms").rglob("*.py"), *(ROOT / "oidc").rglob("*.py")]:
        used |= set(re.findall(r'Message\("([^"]+)"', path.read_text(encoding="utf-8")))
    english = _keys("messages_en.properties")
    assert used - english == set()
    assert _keys("messages_de.properties") == english
    assert _keys("messages_ar.properties") == english


def _realm(**fields):
    return Realm(name="acme", internationalization_enabled=True, supported_locales=["en", "de", "de-CH", "ar"],
                 default_locale="en", **fields)


def test_without_internationalization_every_page_is_english(rf):
    realm = Realm(name="acme", internationalization_enabled=False, supported_locales=["de"], default_locale="de")
    assert messages.locale_for(rf.get("/", {"kc_locale": "de"}, HTTP_ACCEPT_LANGUAGE="de"), realm) == "en"


def test_the_order_of_keycloaks_locale_selector(rf):
    realm = _realm()
    user = User(realm=realm, attributes={"locale": ["ar"]})
    session = AuthSession(root_id="r", tab_id="t", realm_id="x", client_pk="c", protocol="openid-connect",
                          client_data={}, notes={messages.UI_LOCALES_NOTE: "fr de-CH"})
    request = rf.get("/", {"kc_locale": "de"}, HTTP_ACCEPT_LANGUAGE="ar", HTTP_COOKIE="KEYCLOAK_LOCALE=ar")
    assert messages.locale_for(request, realm, user=user, auth_session=session) == "de"  # kc_locale first
    request = rf.get("/", HTTP_ACCEPT_LANGUAGE="de")
    assert messages.locale_for(request, realm, user=user, auth_session=session) == "ar"  # then the user's own
    assert messages.locale_for(request, realm, auth_session=session) == "de-CH"  # then ui_locales
    request = rf.get("/", HTTP_ACCEPT_LANGUAGE="de;q=0.5, ar;q=0.9")
    request.COOKIES["KEYCLOAK_LOCALE"] = "de"
    assert messages.locale_for(request, realm) == "de"  # then the cookie
    del request.COOKIES["KEYCLOAK_LOCALE"]
    assert messages.locale_for(request, realm) == "ar"  # then Accept-Language by quality
    assert messages.locale_for(rf.get("/", HTTP_ACCEPT_LANGUAGE="fr, ja"), realm) == "en"  # the realm's default


def test_only_supported_locales_are_chosen(rf):
    realm = _realm()
    assert messages.locale_for(rf.get("/", {"kc_locale": "fr"}), realm) == "en"
    assert messages.best_match(["en", "de-CH", "de"], "de-AT") == "de"
    assert messages.best_match(["en", "de-CH"], "de") == "de-CH"


def test_a_chosen_locale_is_remembered_in_the_cookie_and_the_chooser_lists_each_in_its_language(rf):
    realm = _realm()
    response = themes.render(rf.get("/realms/acme/x", {"kc_locale": "de", "tab": "1"}), realm, "login.html",
                             {"action_url": "/x"})
    page = response.content.decode()
    assert response.cookies["KEYCLOAK_LOCALE"].value == "de"
    assert response.cookies["KEYCLOAK_LOCALE"]["path"] == "/realms/acme/"
    assert '<html lang="de" dir="ltr">' in page and ">Anmelden</button>" in page
    assert 'aria-label="Sprachen"' in page and ">Deutsch</a>" in page and ">العربية</a>" in page
    assert 'href="/realms/acme/x?kc_locale=ar&amp;tab=1"' in page or 'href="/realms/acme/x?tab=1&amp;kc_locale=ar"' in page


def test_no_chooser_without_internationalization(rf):
    page = themes.render(rf.get("/"), Realm(name="acme"), "login.html", {"action_url": "/x"}).content.decode()
    assert 'id="kc-locale"' not in page and '<html lang="en" dir="ltr">' in page


def test_arabic_pages_are_right_to_left(rf):
    page = themes.render(rf.get("/", {"kc_locale": "ar"}), _realm(), "login.html", {"action_url": "/x"})
    assert '<html lang="ar" dir="rtl">' in page.content.decode()


@pytest.fixture
def custom_themes(tmp_path, settings):
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [tmp_path, *settings.TEMPLATES[0]["DIRS"]]}]
    (tmp_path / "brand" / "account").mkdir(parents=True)
    (tmp_path / "brand" / "messages").mkdir(parents=True)
    (tmp_path / "brand" / "account" / "groups.html").write_text(
        '{% extends "v2/account/base.html" %}{% load messages %}{% block heading %}BRAND {% msg "groups" %}'
        '{% endblock %}', encoding="utf-8")
    (tmp_path / "brand" / "logged-out.html").write_text("BRAND LOGIN PAGE", encoding="utf-8")
    (tmp_path / "brand" / "messages" / "messages_en.properties").write_text("groups=Teams\n", encoding="utf-8")
    messages._bundle.cache_clear()
    yield tmp_path
    messages._bundle.cache_clear()


def test_an_account_theme_overrides_only_the_pages_and_texts_it_ships(custom_themes, rf):
    realm = Realm(name="acme", account_theme="brand")
    user = User(realm=realm, username="bob")
    context = {"user": user, "nav": [], "sign_out_url": "/out"}
    page = themes.render(rf.get("/"), realm, "groups.html", context, kind=themes.ACCOUNT).content.decode()
    assert "BRAND Teams" in page  # its page, its text
    page = themes.render(rf.get("/"), realm, "organizations.html", context, kind=themes.ACCOUNT).content.decode()
    assert "You are not a member of any organization." in page  # v2's page
    # The login theme is another choice: v2 here, whatever the account theme ships.
    assert "BRAND" not in themes.render(rf.get("/"), realm, "logged-out.html").content.decode()
    realm.login_theme = "brand"
    assert themes.render(rf.get("/"), realm, "logged-out.html").content.decode() == "BRAND LOGIN PAGE"
