"""The consumer portal (webhooks/portal.py): a signed, expiring link to one endpoint's page, issued by
the Admin REST API, its token in the fragment and then in the endpoint's cookie; what its holder
can do there, each change an admin event; every link that must open nothing (altered, expired,
another realm's, a deleted endpoint's, withdrawn) and sets no cookie; links of the old form."""
import json
import re
from datetime import timedelta
from html import unescape

import pytest
import standardwebhooks
import time_machine
from django.core import signing
from django.test import Client
from django.utils import timezone

from realms.models import Event, Realm
from webhooks import delivery, portal, services
from webhooks.models import Delivery, Endpoint, Message

from .test_rest import tokens  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]


@pytest.fixture
def endpoint(realm, receiver_server):
    created, secret = services.create_endpoint(realm, receiver_server.url(), ["user.*"], description="CRM sync")
    created.first_secret = secret
    return created


@pytest.fixture
def sent(monkeypatch):
    """The delivery ids handed to the workers (a worker is started by the tests that need one)."""
    ids = []
    monkeypatch.setattr("webhooks.dispatch.deliveries", lambda batch: ids.extend(batch))
    return ids


def _link(tokens, endpoint, body=None):  # noqa: F811
    resp = Client(HTTP_AUTHORIZATION=f"Bearer {tokens['admin']}").post(
        f"/admin/realms/wh-realm/webhooks/{endpoint.pk}/portal-link", data=json.dumps(body or {}),
        content_type="application/json")
    assert resp.status_code == 200, resp.content
    return resp.json()


def _admin_events(endpoint, operation):
    return Event.objects.filter(kind=Event.ADMIN, resource_path=f"webhooks/{endpoint.pk}", type=operation)


def _path(url):
    return re.sub(r"^https?://[^/]+", "", url)


def _csrf(html):
    return unescape(re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1))


def _split(url):
    """(path, token) of a link: the token is its fragment."""
    path, _, token = _path(url).partition("#")
    return path, token


def _open(http, url, path=None):
    """What the link's page does: the opening page's form, the fragment in it, posted; the answer."""
    link_path, token = _split(url)
    path = path or link_path
    page = http.get(path)
    assert page.status_code == 200 and 'id="open-form"' in page.content.decode()
    return http.post(path + "session", {"csrfmiddlewaretoken": _csrf(page.content.decode()), "token": token})


@pytest.fixture
def opened(tokens, endpoint):  # noqa: F811
    """A browser (Django's client, CSRF enforced) on the endpoint's portal page."""
    link = _link(tokens, endpoint)
    http = Client(enforce_csrf_checks=True)
    assert _open(http, link["url"]).status_code == 303
    http.path = _split(link["url"])[0]
    page = http.get(http.path)
    assert page.status_code == 200
    http.csrf = _csrf(page.content.decode())
    return http


def _post(http, path=None, **data):
    return http.post(path or http.path, {"csrfmiddlewaretoken": http.csrf, **data})


def test_a_link_is_issued_by_the_admin_api_and_opens_the_endpoint_page(tokens, endpoint):  # noqa: F811
    link = _link(tokens, endpoint, {"expiresIn": 3600})
    # The token only in the fragment, which a browser never sends: the path names the endpoint.
    match = re.fullmatch(r"http://testserver/realms/wh-realm/webhooks/portal/([^/#]+)/#([^/#?]+)", link["url"])
    assert match and match.group(1) == endpoint.pk and ":" in match.group(2)
    assert signing.loads(match.group(2), salt=portal.SALT)["e"] == endpoint.pk
    expires = timezone.datetime.fromisoformat(link["expiresAt"].replace("Z", "+00:00"))
    assert abs((expires - timezone.now()).total_seconds() - 3600) < 5
    http = Client(enforce_csrf_checks=True)
    # Without the cookie the address is the opening page, in words, showing nothing of the endpoint.
    opening = http.get(_split(link["url"])[0])
    html = opening.content.decode()
    assert opening.status_code == 200 and endpoint.url not in html and "CRM sync" not in html
    assert "copy the part of the link after the # sign" in html and "webhook-portal-open.js" in html
    assert opening["Referrer-Policy"] == "same-origin" and "no-store" in opening["Cache-Control"]
    answer = _open(http, link["url"])
    assert answer.status_code == 303 and answer["Location"] == _split(link["url"])[0]
    resp = http.get(answer["Location"])
    html = resp.content.decode()
    assert resp.status_code == 200 and endpoint.url in html and "CRM sync" in html
    assert "This link works until" in html and "Active" in html
    assert resp["Referrer-Policy"] == "same-origin" and "no-store" in resp["Cache-Control"]
    assert not re.search(r"\bwebhookPortal\w+", html)  # every text is a text, never a key
    # Issuing a link is itself on the record.
    event = _admin_events(endpoint, "ACTION").get()
    assert event.details["action"] == "portal-link" and event.client_id == "admin-cli"


def test_the_cookie_holds_the_token_for_this_endpoint_alone(tokens, endpoint):  # noqa: F811
    link = _link(tokens, endpoint, {"expiresIn": 3600})
    path, token = _split(link["url"])
    answer = _open(Client(enforce_csrf_checks=True), link["url"])
    cookie = answer.cookies[portal.COOKIE]
    assert cookie.value == token and cookie["httponly"] and cookie["samesite"] == "Strict"
    assert cookie["path"] == f"/realms/wh-realm/webhooks/portal/{endpoint.pk}/" == path
    assert 3590 <= int(cookie["max-age"]) <= 3600 and not cookie["secure"]  # plain HTTP here
    # Over HTTPS it is Secure.
    https = Client(enforce_csrf_checks=True)
    page = https.get(path, secure=True)
    answer = https.post(path + "session", {"csrfmiddlewaretoken": _csrf(page.content.decode()), "token": token},
                        secure=True, HTTP_REFERER="https://testserver" + path)
    assert answer.status_code == 303 and answer.cookies[portal.COOKIE]["secure"]


def test_the_session_needs_the_csrf_token_and_a_post(tokens, endpoint):  # noqa: F811
    path, token = _split(_link(tokens, endpoint)["url"])
    http = Client(enforce_csrf_checks=True)
    resp = http.post(path + "session", {"token": token})
    assert resp.status_code == 403 and portal.COOKIE not in resp.cookies
    assert Client().get(path + "session").status_code == 404


def test_without_the_cookie_the_pages_open_nothing(tokens, endpoint):  # noqa: F811
    path, _ = _split(_link(tokens, endpoint)["url"])
    resp = Client().get(path + "events/msg_nothing")
    assert resp.status_code == 403 and "opens only through the link" in resp.content.decode()
    http = Client()
    http.get(path)
    assert http.post(path, {"action": "pause"}).status_code == 403
    endpoint.refresh_from_db()
    assert endpoint.enabled is True


@pytest.mark.parametrize("body,needle", [({"expiresIn": 10}, "expiresIn"), ({"expiresIn": 10**9}, "expiresIn"),
                                         ({"expiresIn": "1h"}, "expiresIn"), ([1], "JSON object")])
def test_a_link_with_a_bad_lifetime_is_refused(tokens, endpoint, body, needle):  # noqa: F811
    resp = Client(HTTP_AUTHORIZATION=f"Bearer {tokens['admin']}").post(
        f"/admin/realms/wh-realm/webhooks/{endpoint.pk}/portal-link", data=json.dumps(body),
        content_type="application/json")
    assert resp.status_code == 400 and needle in resp.json()["errorMessage"]


def test_issuing_a_link_needs_manage_events(tokens, endpoint):  # noqa: F811
    resp = Client(HTTP_AUTHORIZATION=f"Bearer {tokens['plain']}").post(
        f"/admin/realms/wh-realm/webhooks/{endpoint.pk}/portal-link", content_type="application/json")
    assert resp.status_code == 403
    assert Client().post(f"/admin/realms/wh-realm/webhooks/{endpoint.pk}/portal-link").status_code == 401


def test_an_altered_expired_foreign_or_orphaned_link_opens_nothing(tokens, endpoint, realm):  # noqa: F811
    url = _link(tokens, endpoint, {"expiresIn": 600})["url"]
    path, token = _split(url)
    claims = signing.loads(token, salt=portal.SALT)
    longer = signing.dumps({**claims, "x": claims["x"] + 10**6}, salt="another salt")  # not our signature
    other = Endpoint.objects.create(realm=Realm.objects.create(name="other-realm"), url=endpoint.url)
    mine = Endpoint.objects.create(realm=realm, url=endpoint.url)
    refused = {  # (the page's path, the token posted)
        "altered": (path, token[:-2] + ("AA" if token[-2:] != "AA" else "BB")),
        "re-signed elsewhere": (path, longer),
        "another realm": (path.replace("/wh-realm/", "/other-realm/"), token),
        "another realm's endpoint": (path, signing.dumps({**claims, "e": other.pk}, salt=portal.SALT)),
        "the same realm's other endpoint": (path.replace(endpoint.pk, mine.pk), token),
        "empty": (path, ""),
    }
    for what, (page, bad) in refused.items():
        resp = _open(Client(enforce_csrf_checks=True), f"{page}#{bad}", page)
        assert resp.status_code == 403, what
        assert "This link is not valid" in resp.content.decode() and endpoint.url not in resp.content.decode(), what
        assert portal.COOKIE not in resp.cookies, what
        # The old form of the same link: refused alike, no cookie.
        old = Client().get(page.replace(f"/{page.split('/')[-2]}/", f"/{bad}/"))
        if what != "the same realm's other endpoint" and bad:  # that one is a good link to this endpoint
            assert old.status_code == 403 and portal.COOKIE not in old.cookies, what
    with time_machine.travel(timezone.now() + timedelta(seconds=601)):
        resp = _open(Client(enforce_csrf_checks=True), url)
    assert resp.status_code == 403 and "This link has expired" in resp.content.decode()
    assert portal.COOKIE not in resp.cookies
    http = Client()
    assert _open(http, url).status_code == 303 and http.get(path).status_code == 200
    # An open portal whose link expires closes: the cookie is checked on every request.
    with time_machine.travel(timezone.now() + timedelta(seconds=601)):
        resp = http.get(path)
    assert resp.status_code == 403 and "This link has expired" in resp.content.decode()
    services.delete_endpoint(endpoint)
    assert _open(Client(), url).status_code == 403


def test_pause_resume_and_event_types(opened, endpoint):
    resp = _post(opened, action="pause")
    assert resp.status_code == 302 and resp["Location"].endswith("?done=webhookPortalPaused")
    endpoint.refresh_from_db()
    assert endpoint.enabled is False
    page = opened.get(resp["Location"]).content.decode()
    assert "Deliveries are paused" in page and "Paused" in page and 'id="resume"' in page
    _post(opened, action="resume")
    endpoint.refresh_from_db()
    assert endpoint.enabled is True
    _post(opened, action="event-types", event_types=["client.*", "user.created"])
    endpoint.refresh_from_db()
    assert endpoint.event_types == ["client.*", "user.created"]
    resp = _post(opened, action="event-types", event_types=["nope.never"])
    assert resp.status_code == 400 and "unknown event type" in resp.content.decode()
    endpoint.refresh_from_db()
    assert endpoint.event_types == ["client.*", "user.created"]
    _post(opened, action="event-types", event_types=["*"])
    endpoint.refresh_from_db()
    assert endpoint.event_types == []  # every event
    events = list(_admin_events(endpoint, "UPDATE"))
    assert len(events) == 4 and {e.client_id for e in events} == {portal.CLIENT}


def test_forms_need_the_csrf_token(opened, endpoint):
    resp = opened.post(opened.path, {"action": "pause"})
    assert resp.status_code == 403
    endpoint.refresh_from_db()
    assert endpoint.enabled is True


def test_rotating_shows_the_new_secret_once_and_it_signs(opened, endpoint, sent, receiver_server,
                                                         django_capture_on_commit_callbacks):
    resp = _post(opened, action="rotate", overlap="now")
    html = resp.content.decode()
    assert resp.status_code == 200 and "The signing secret was rotated" in html
    new_secret = unescape(re.search(r'id="new-secret"[^>]*value="([^"]+)"', html).group(1))
    assert new_secret.startswith("whsec_") and new_secret != endpoint.first_secret
    assert new_secret not in opened.get(opened.path).content.decode()  # shown once
    with django_capture_on_commit_callbacks(execute=True):
        _post(opened, action="test")
    delivery.attempt(sent[-1])
    received = receiver_server.requests[-1]
    assert standardwebhooks.Webhook(new_secret).verify(received["body"], received["headers"])["type"] == "webhook.test"
    # "Now" (after a leak): the old secret signs nothing any more.
    with pytest.raises(standardwebhooks.webhooks.WebhookVerificationError):
        standardwebhooks.Webhook(endpoint.first_secret).verify(received["body"], received["headers"])


def test_test_event_log_and_redelivery(opened, endpoint, sent, receiver_server, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        resp = _post(opened, action="test")
    assert resp["Location"].endswith("?done=webhookPortalTestSent")
    delivery.attempt(sent[-1])
    body = receiver_server.requests[-1]["body"]
    assert standardwebhooks.Webhook(endpoint.first_secret).verify(
        body, receiver_server.requests[-1]["headers"])["type"] == "webhook.test"
    message = Message.objects.get(type="webhook.test")
    page = opened.get(opened.path).content.decode()
    assert f"events/{message.pk}" in page and "Delivered" in page
    assert "Delivered" in opened.get(opened.path + "?state=delivered").content.decode()
    assert "No deliveries yet" in opened.get(opened.path + "?state=failed").content.decode()
    detail = opened.get(f"{opened.path}events/{message.pk}")
    html = detail.content.decode()
    assert detail.status_code == 200 and message.pk in html and "Attempt 1" in html and "200" in html
    assert unescape(html).count('"endpointId"') == 1  # the request body as sent, laid out
    with django_capture_on_commit_callbacks(execute=True):
        resp = _post(opened, f"{opened.path}events/{message.pk}")
    assert resp.status_code == 302 and Delivery.objects.get(message=message).state == Delivery.PENDING
    assert "queued to be sent again" in opened.get(resp["Location"]).content.decode()
    # A range: both times needed, then every event in it again.
    assert _post(opened, action="redeliver-range", since="", until="").status_code == 400
    now = timezone.now()
    Delivery.objects.filter(message=message).update(state=Delivery.DELIVERED)
    resp = _post(opened, action="redeliver-range", since=(now - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S"),
                 until=(now + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S"))
    assert resp.status_code == 302 and resp["Location"].endswith("done=webhookPortalRedelivered&n=1")
    assert "Events queued again: 1" in opened.get(resp["Location"]).content.decode()
    actions = [e.details["action"] for e in _admin_events(endpoint, "ACTION") if e.client_id == portal.CLIENT]
    assert sorted(actions) == ["redeliver", "redeliver", "test"]


def test_an_event_of_another_endpoint_is_not_shown(opened, realm, receiver_server, sent,
                                                  django_capture_on_commit_callbacks):
    other, _ = services.create_endpoint(realm, receiver_server.url())
    with django_capture_on_commit_callbacks(execute=True):
        message = services.send_test_event(other)
    assert opened.get(f"{opened.path}events/{message.pk}").status_code == 404


def test_revoking_closes_every_link_issued_before(tokens, endpoint):  # noqa: F811
    old = _link(tokens, endpoint)["url"]
    path = _split(old)[0]
    portal_open = Client()
    assert _open(portal_open, old).status_code == 303 and portal_open.get(path).status_code == 200
    api = Client(HTTP_AUTHORIZATION=f"Bearer {tokens['admin']}")
    with time_machine.travel(timezone.now(), tick=False):
        assert api.delete(f"/admin/realms/wh-realm/webhooks/{endpoint.pk}/portal-link").status_code == 204
        # The open portal closes at once: its next page is refused and its cookie dropped.
        resp = portal_open.get(path)
        assert resp.status_code == 403 and "This link was withdrawn" in resp.content.decode()
        assert resp.cookies[portal.COOKIE].value == "" and endpoint.url not in resp.content.decode()
        resp = _open(Client(), old)
        assert resp.status_code == 403 and "This link was withdrawn" in resp.content.decode()
        assert portal.COOKIE not in resp.cookies
        # A link issued in the same second is withdrawn too; one from the next second on works.
        same_second = _link(tokens, endpoint)["url"]
        assert _open(Client(), same_second).status_code == 403
    with time_machine.travel(timezone.now() + timedelta(seconds=2)):
        assert _open(Client(), _link(tokens, endpoint)["url"]).status_code == 303
        assert _open(Client(), old).status_code == 403
    assert _admin_events(endpoint, "ACTION").filter(details__action="portal-links-revoked").count() == 1
    plain = Client(HTTP_AUTHORIZATION=f"Bearer {tokens['plain']}")
    assert plain.delete(f"/admin/realms/wh-realm/webhooks/{endpoint.pk}/portal-link").status_code == 403


def test_a_link_of_the_old_form_sets_the_cookie_and_redirects(tokens, endpoint):  # noqa: F811
    path, token = _split(_link(tokens, endpoint, {"expiresIn": 600})["url"])
    old = f"/realms/wh-realm/webhooks/portal/{token}/"
    http = Client(enforce_csrf_checks=True)
    resp = http.get(old)
    assert resp.status_code == 303 and resp["Location"] == path
    cookie = resp.cookies[portal.COOKIE]
    assert cookie.value == token and cookie["httponly"] and cookie["samesite"] == "Strict" and cookie["path"] == path
    page = http.get(path)
    assert page.status_code == 200 and endpoint.url in page.content.decode()
    # A form posted there: the token-free address acts.
    resp = http.post(path, {"csrfmiddlewaretoken": _csrf(page.content.decode()), "action": "pause"})
    assert resp.status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.enabled is False
    # An old event address too; nothing is done on an old-form path but that redirect.
    resp = Client().get(f"{old}events/msg_x")
    assert resp.status_code == 303 and resp["Location"] == f"{path}events/msg_x"
    assert Client().post(old, {"action": "resume"}).status_code in (403, 404)


def test_the_console_issues_and_revokes_links(realm, endpoint):
    from realms.models import Role, User

    master = Realm.objects.get(name="master")
    admin = User.objects.create(realm=master, username="portal-console-admin")
    admin.roles.add(Role.objects.get(realm=master, client=None, name="admin"))
    console = Client()
    console.force_login(admin)
    console.get(f"/admin/master/console/webhooks/endpoint/?realm__id__exact={realm.pk}")
    resp = console.post("/admin/master/console/webhooks/endpoint/",
                        {"action": "portal_link", "_selected_action": [endpoint.pk]}, follow=True)
    shown = [str(m) for m in resp.context["messages"] if "/webhooks/portal/" in str(m)]
    assert len(shown) == 1 and "valid until" in shown[0]
    link = re.search(r"(https?://\S+/#\S+)$", shown[0]).group(1)
    holder = Client()
    assert _open(holder, link).status_code == 303 and holder.get(_split(link)[0]).status_code == 200
    console.post("/admin/master/console/webhooks/endpoint/",
                 {"action": "revoke_portal_links", "_selected_action": [endpoint.pk]})
    assert holder.get(_split(link)[0]).status_code == 403
    assert _open(Client(), link).status_code == 403
    assert {e.details["action"] for e in _admin_events(endpoint, "ACTION")} == {"portal-link", "portal-links-revoked"}


def test_presenting_links_is_limited_per_address_as_the_realms_sign_in_form(fresh_caches, tokens, endpoint,  # noqa: F811
                                                                           realm):
    """rateLimit.login.perAddress (decision 0091) counts the session posts and old-form links of an
    address; over it, the page says so in words, 429 with Retry-After, before the token is read."""
    realm.attributes = {**(realm.attributes or {}), "rateLimit.login.perAddress": "2"}
    realm.save()
    url = _link(tokens, endpoint)["url"]
    path, token = _split(url)
    with time_machine.travel(timezone.now(), tick=False):  # one window of the count
        for _ in range(2):
            assert _open(Client(enforce_csrf_checks=True), f"{path}#wrong-{token}", path).status_code == 403
        for posted in (f"wrong-{token}", token):  # the good link too: the limit comes first
            resp = _open(Client(enforce_csrf_checks=True), f"{path}#{posted}", path)
            html = resp.content.decode()
            assert resp.status_code == 429 and 1 <= int(resp["Retry-After"]) <= 60, resp.content
            assert "Too many attempts from your network" in html and portal.COOKIE not in resp.cookies
            assert endpoint.url not in html and not re.search(r"\b(webhookPortal|tooMany)\w+", html)
        old = Client().get(f"/realms/wh-realm/webhooks/portal/{token}/")
        assert old.status_code == 429 and portal.COOKIE not in old.cookies
        # Another address has its own count.
        elsewhere = Client(enforce_csrf_checks=True, REMOTE_ADDR="10.0.0.7")  # private: no HTTPS needed
        assert _open(elsewhere, url).status_code == 303 and elsewhere.get(path).status_code == 200


def test_a_disabled_realms_portal_opens_nothing(tokens, endpoint, realm):  # noqa: F811
    link = _link(tokens, endpoint)["url"]
    path, token = _split(link)
    http = Client()
    assert _open(http, link).status_code == 303 and http.get(path).status_code == 200
    realm.enabled = False
    realm.save(update_fields=["enabled"])
    # As every page of a disabled realm: the open portal, a new opening and a link of the old form.
    assert http.get(path).status_code == 404
    assert Client().post(path + "session", {"token": token}).status_code == 404
    assert Client().get(f"/realms/wh-realm/webhooks/portal/{token}/").status_code == 404
    realm.enabled = True
    realm.save(update_fields=["enabled"])
    assert http.get(path).status_code == 200
