"""The account console's "My resources" page (realms.account.console.resources) for a browser
with an SSO session: share by username or e-mail, revoke, accept and deny a request, what is
shared with me; each change a CSRF-checked post the UMA grant then honours."""
import re

import pytest
from django.test import Client as HttpClient

from realms.models import PermissionTicket
from tests.authz.test_uma import error, pat, protection, realm_b, uma, user_token  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db
PAGE = "/realms/realm-b/account/resources"


def signed_in(username):
    """A browser that signed in to the account console through the login page."""
    browser = HttpClient()
    login = browser.get(PAGE, follow=True)
    action = re.search(r'action="([^"]+)"', login.content.decode()).group(1).replace("&amp;", "&")
    done = browser.post(action, {"username": username, "password": username}, follow=True)
    assert done.status_code == 200 and done.request["PATH_INFO"] == PAGE, done.content[:300]
    http = HttpClient(enforce_csrf_checks=True)
    http.cookies = browser.cookies
    return http


def csrf(page):
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)


@pytest.fixture
def album(realm_b):
    realm_b.user_managed_access_allowed = True  # the export has it off: My resources answers only when on
    realm_b.save(update_fields=["user_managed_access_allowed"])
    made = protection("post", "/resource_set", pat(), {
        "name": "Holidays", "resource_scopes": ["album:view", "album:delete"], "owner": "jdoe",
        "ownerManagedAccess": True})
    assert made.status_code == 201, made.content
    return made.json()


def post(http, album, **fields):
    page = http.get("/realms/realm-b/account/")  # a page with a form, whoever signed in
    return http.post(PAGE, {"csrfmiddlewaretoken": csrf(page), "resource": album["_id"], **fields})


def test_share_by_email_then_revoke(album):
    jdoe = signed_in("jdoe")
    page = jdoe.get(PAGE).content.decode()
    assert "Holidays" in page and "This resource is not shared." in page and "realm-b-client" in page
    asked = {"permission": f"{album['_id']}#album:view", "response_mode": "decision"}
    assert error(uma(user_token("kolo"), **asked))[2] == "not_authorized"

    done = post(jdoe, album, action="share", user="kolo@keycloak.org", scope=["album:view"])
    assert done.status_code == 302 and done["Location"].endswith("?notice=shareSuccess")
    assert uma(user_token("kolo"), **asked).json() == {"result": True}
    text = jdoe.get(done["Location"]).content.decode()
    assert "Resource successfully shared." in text and 'data-username="kolo"' in text
    # Sharing one more scope keeps the first.
    post(jdoe, album, action="share", user="kolo", scope=["album:delete"])
    assert set(PermissionTicket.objects.values_list("scope", flat=True)) == {"album:view", "album:delete"}
    kolo_page = signed_in("kolo").get(PAGE).content.decode()
    assert "Shared with me" in kolo_page and "album:view" in kolo_page.split("shared-with-me")[1]

    done = post(jdoe, album, action="revoke", user="kolo")
    assert done["Location"].endswith("?notice=unShareSuccess")
    assert error(uma(user_token("kolo"), **asked))[2] == "not_authorized"
    assert not PermissionTicket.objects.exists()


def test_accept_and_deny_requests(album):
    kolo = user_token("kolo")
    uma(kolo, submit_request="true", permission=f"{album['_id']}#album:view")
    jdoe = signed_in("jdoe")
    text = jdoe.get(PAGE).content.decode()
    assert "Permission requests" in text and 'class="row request" data-username="kolo"' in text
    assert "Your pending requests" in signed_in("kolo").get(PAGE).content.decode()
    post(jdoe, album, action="approve", user="kolo")
    assert uma(user_token("kolo"), permission=f"{album['_id']}#album:view", response_mode="decision").json() == {
        "result": True}
    uma(user_token("kolo"), submit_request="true", permission=f"{album['_id']}#album:delete")
    post(jdoe, album, action="deny", user="kolo")
    # The request is gone, what was accepted before stays.
    assert [(t.scope, t.granted_at is not None) for t in PermissionTicket.objects.all()] == [("album:view", True)]


def test_refusals_are_shown_and_nothing_changes(album):
    jdoe = signed_in("jdoe")
    unknown = post(jdoe, album, action="share", user="nobody", scope=["album:view"])
    assert unknown.status_code == 400 and "No user nobody was found." in unknown.content.decode()
    assert 'aria-invalid="true"' in unknown.content.decode()
    none = post(jdoe, album, action="share", user="kolo")
    assert none.status_code == 400 and "Choose at least one permission to share." in none.content.decode()
    own = post(jdoe, album, action="share", user="jdoe", scope=["album:view"])
    assert own.status_code == 400 and "This resource cannot be shared that way." in own.content.decode()
    assert not PermissionTicket.objects.exists()
    # Another user's resource is not theirs to share; no CSRF token, no change.
    kolo = signed_in("kolo")
    assert post(kolo, album, action="share", user="kolo", scope=["album:view"]).status_code == 404
    assert jdoe.post(PAGE, {"resource": album["_id"], "action": "share", "user": "kolo",
                            "scope": "album:view"}).status_code == 403
    assert not PermissionTicket.objects.exists()
