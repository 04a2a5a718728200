"""The realm's ``displayNameHtml`` is the login page's header, as Keycloak's login theme shows it,
reduced to safe formatting tags: never a script, an event handler or a link of the realm admin's
making on the sign-in page."""
import pytest

from realms.http.safe_html import safe_html
from tests.oidc.browser.test_browser_authorize import AUTH, _params

HOSTILE = ('<div class="kc-logo-text"><span>Acme</span> <b onclick="steal()">Corp</b></div>'
           '<script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">click</a>'
           '<style>body{display:none}</style><!-- note --><i>&lt;b&gt; stays text')


def test_the_login_page_header_shows_the_display_name_html_made_safe(client, realm, client_app):
    realm.display_name = "Acme Corp"
    realm.display_name_html = HOSTILE
    realm.save()
    page = client.get(AUTH, _params()).content.decode()
    header = page.split('id="kc-header-wrapper">', 1)[1].split("</div>\n", 1)[0] + "</div>"
    assert header == ('<div class="kc-logo-text"><span>Acme</span> <b>Corp</b></div>click'
                      '<i>&lt;b&gt; stays text</i></div>')
    for banned in ("<script", "<style", "<!--", "<img", "<a "):
        assert banned not in header, banned
    for banned in ("alert(", "steal()", "onerror", "javascript:", "display:none"):
        assert banned not in page, banned
    assert "<title>" in page and "Acme Corp" in page.split("<title>", 1)[1].split("</title>", 1)[0]


def test_without_display_name_html_the_header_is_the_display_name(client, realm, client_app):
    realm.display_name = "Acme <Corp>"
    realm.save()
    page = client.get(AUTH, _params()).content.decode()
    assert '<div class="realm" id="kc-header-wrapper">Acme &lt;Corp&gt;</div>' in page


@pytest.mark.parametrize("given, shown", [
    ("<p>a<br>b</p>", "<p>a<br>b</p>"),
    ("<span class='x\" onmouseover=\"y'>t</span>", '<span class="x&quot; onmouseover=&quot;y">t</span>'),
    ("<div><span>open", "<div><span>open</span></div>"),
    ("</div>stray<em>x</strong></em>", "stray<em>x</em>"),
    ("<svg><script>1</script><text>svg text</text></svg>after", "after"),
    ("<iframe src=//evil></iframe><b/>", "<b></b>"),
])
def test_safe_html_keeps_only_formatting_tags(given, shown):
    assert safe_html(given) == shown
