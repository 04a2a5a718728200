"""Message bundles: realm texts over the theme's bundle over v2's, locale over English."""
import pytest

from realms.http import messages
from realms.models import Realm


@pytest.fixture
def theme_dir(tmp_path, settings):
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [tmp_path, *settings.TEMPLATES[0]["DIRS"]]}]
    (tmp_path / "acme" / "messages").mkdir(parents=True)
    (tmp_path / "acme" / "messages" / "messages_de.properties").write_text(
        "doLogIn=Anmelden bei ACME\nlong=eins \\\n  zwei\nquote=it''s {0}\n", encoding="utf-8")
    messages._bundle.cache_clear()
    yield tmp_path
    messages._bundle.cache_clear()


def test_lookup_order(theme_dir):
    realm = Realm(name="r", login_theme="acme", localization_texts={"de": {"password": "Kennwort (Realm)"}})
    assert messages.text(realm, "de", "doLogIn") == "Anmelden bei ACME"
    assert messages.text(realm, "de", "password") == "Kennwort (Realm)"
    assert messages.text(realm, "de", "rememberMe") == "Angemeldet bleiben"  # v2's German
    assert messages.text(realm, "en", "doLogIn") == "Sign in"
    assert messages.text(realm, "de", "long") == "eins zwei"
    assert messages.text(realm, "de", "quote", "ok") == "it's ok"
    assert messages.text(realm, "de", "noSuchKey") == "noSuchKey"


def test_login_page_uses_the_realms_texts(rf):
    from realms.http import themes
    realm = Realm(name="texts", default_locale="en", localization_texts={"en": {"doLogIn": "Let me in"}})
    page = themes.render(rf.get("/"), realm, "login.html", {"action_url": "/x"}).content.decode()
    assert ">Let me in</button>" in page and "<title>Sign in to texts</title>" in page
