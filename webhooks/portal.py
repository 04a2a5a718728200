"""The consumer portal: a page a realm admin hands to the team that owns one endpoint, as a signed,
expiring link (Svix's application portal, for one endpoint). No console account is needed: the
link is the credential. Through it that team sees the endpoint's deliveries and each attempt's
request and response, redelivers one event or a time range, rotates the signing secret, pauses
and resumes the endpoint, changes its event types and sends a test event. Everything it does goes
through ``services`` (the console's and the REST API's own operations) and is an admin event by
the ``webhook-portal`` client.

The link is ``/realms/<realm>/webhooks/portal/<endpoint id>/#<token>``: ``token`` is Django's
signature (the deployment's secret key, HMAC-SHA256) over the endpoint's id and the link's expiry.
It is in the fragment, which browsers never send, so no access log or proxy sees it (Svix's magic
link). The page, without a portal cookie, is a small form whose script puts the fragment in and
posts it (CSRF-protected) to ``<endpoint id>/session``, which answers with the token in an
HttpOnly, SameSite=Strict cookie scoped to that endpoint's path. The cookie is checked on every
request as the link is. A link that is altered, expired, of another realm or of a deleted endpoint
opens nothing. Links of the old form (the token in the path) still open: they set the cookie and
redirect to the token-free address (decision 0101)."""
import json
from datetime import UTC, datetime, timedelta

from django.core import signing
from django.http import Http404, HttpResponseRedirect
from django.utils import timezone
from django.views.decorators.csrf import csrf_protect
from rest_framework.response import Response

from realms.admin.names import when
from realms.admin_api.errors import Invalid, NotFound
from realms.admin_api.views import RealmResource
from realms.audit.admin_events import AuthDetails
from realms.data import realm_cache
from realms.http import admission, messages, themes
from realms.http.web import base_url, client_address, is_secure
from realms.models import Realm

from . import catalogue, payloads, services
from .errors import WebhooksError
from .models import Delivery, DeliveryAttempt, Endpoint, Message

SALT = "webhooks.portal"
COOKIE = "webhook_portal"  # one per endpoint: its Path is that endpoint's portal
CLIENT = "webhook-portal"  # the client named in the admin events of changes made here
DEFAULT_LINK_SECONDS = 7 * 24 * 3600  # as Svix's portal links
MAX_LINK_SECONDS = 30 * 24 * 3600
PAGE_SIZE = 25
STATES = ("failed", "pending", "sending", "delivered")


class LinkRefused(WebhooksError):
    """The link opens nothing; ``reason`` is the message key of what the page says."""

    def __init__(self, reason, status):
        super().__init__(reason)
        self.reason, self.status = reason, status


def issue_link(request, endpoint, expires_in=DEFAULT_LINK_SECONDS, who=None):
    """(url, expires_at) of a new portal link to ``endpoint``, an admin event of its own."""
    if not isinstance(expires_in, int) or isinstance(expires_in, bool) or not 60 <= expires_in <= MAX_LINK_SECONDS:
        raise services.WebhookError(f"expiresIn is a number of seconds from 60 to {MAX_LINK_SECONDS}")
    expires_at = timezone.now().replace(microsecond=0) + timedelta(seconds=expires_in)
    # "i": when it was issued, for revocation (``revoke_links``); whole seconds, as the expiry.
    issued = int(timezone.now().timestamp())
    token = signing.dumps({"e": endpoint.pk, "x": int(expires_at.timestamp()), "i": issued}, salt=SALT)
    _audit(endpoint, who, action="portal-link", expiresAt=_iso(expires_at))
    # Relative when the base URL is unknown (no request, no IDP_BASE_URL: a command in dev mode).
    # The token in the fragment: browsers never send it, so no access log records it.
    return f"{base_url(request)}{_base(endpoint.realm.name, endpoint.pk)}#{token}", expires_at


def open_link(realm_name, token):
    """(endpoint, expires_at) the link opens, or LinkRefused."""
    try:
        claims = signing.loads(token, salt=SALT)
        endpoint_id, expiry, issued = claims["e"], int(claims["x"]), int(claims["i"])
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        raise LinkRefused("webhookPortalLinkInvalid", 403) from None
    expires_at = datetime.fromtimestamp(expiry, tz=UTC)
    if expires_at <= timezone.now():
        raise LinkRefused("webhookPortalLinkExpired", 403)
    endpoint = Endpoint.objects.select_related("realm").filter(pk=endpoint_id, realm__name=realm_name).first()
    if endpoint is None:  # deleted since, or a link of another realm's endpoint
        raise LinkRefused("webhookPortalLinkInvalid", 403)
    revoked = endpoint.portal_links_not_before
    if revoked is not None and issued < int(revoked.timestamp()):
        raise LinkRefused("webhookPortalLinkRevoked", 403)
    return endpoint, expires_at


def revoke_links(endpoint, who=None):
    """Every link issued so far opens nothing any more (a link issued from the next second on works).
    Svix's "expire all"; an admin event of its own."""
    endpoint.portal_links_not_before = timezone.now().replace(microsecond=0) + timedelta(seconds=1)
    endpoint.save(update_fields=["portal_links_not_before", "updated_at"])
    _audit(endpoint, who, action="portal-links-revoked")


def _audit(endpoint, who, **details):
    """An admin event (ACTION) for what ``services`` does not record itself."""
    services._admin_event(endpoint, "ACTION", who, details)


def _iso(value):
    return value.isoformat().replace("+00:00", "Z")


class PortalLink(RealmResource):
    """``POST /admin/realms/<realm>/webhooks/<id>/portal-link`` (``{"expiresIn": seconds}``,
    optional): ``{"url", "expiresAt"}``; ``DELETE``: every link issued so far revoked. Managing the
    endpoint's events is what a link lets its holder do, so both need what changing it needs."""

    required_role = {"POST": "manage-events", "DELETE": "manage-events"}

    def handle_exception(self, exc):
        if isinstance(exc, services.WebhookError):
            exc = Invalid(str(exc))
        return super().handle_exception(exc)

    def endpoint(self, endpoint_id):
        endpoint = Endpoint.objects.filter(realm=self.realm, pk=endpoint_id).select_related("realm").first()
        if endpoint is None:
            raise NotFound("Webhook not found.")
        return endpoint

    def delete(self, request, endpoint_id, **kwargs):
        revoke_links(self.endpoint(endpoint_id), who=self.auth_details())
        return Response(status=204)

    def post(self, request, endpoint_id, **kwargs):
        endpoint = self.endpoint(endpoint_id)
        body = request.data if request.data else {}
        if not isinstance(body, dict):
            raise services.WebhookError("the body is a JSON object")
        url, expires_at = issue_link(request, endpoint, body.get("expiresIn", DEFAULT_LINK_SECONDS), who=self.auth_details())
        return Response({"url": url, "expiresAt": _iso(expires_at)})


# The pages ------------------------------------------------------------------------------------

def _render(request, realm, page, context, status=200):
    response = themes.render(request, realm, page, context, status=status)
    # The link is a credential: never sent to another site. Not "no-referrer": under it the
    # browser sends "Origin: null" with the page's own forms, which the CSRF check refuses.
    response["Referrer-Policy"] = "same-origin"
    return response


def _base(realm_name, endpoint_id):
    return f"/realms/{realm_name}/webhooks/portal/{endpoint_id}/"


def _refused(request, realm_name, reason, status, forget=None, key=None):
    """The page in words; ``key``: the endpoint's id, so that a new link's fragment opened on it
    (a tab showing this page loads nothing for a new fragment) is posted all the same."""
    response = _render(request, Realm.objects.filter(name=realm_name).first(), "webhook-portal-refused.html",
                       {"reason": reason, "session": _base(realm_name, key) + "session" if key else None},
                       status=status)
    if forget:  # a cookie that opens nothing any more
        response.delete_cookie(COOKIE, path=forget, samesite="Strict")
    return response


def _opened(request, realm_name, token, endpoint_id=None):
    """(endpoint, expires_at) of ``token`` (``open_link``), refused too when it is another endpoint's."""
    endpoint, expires_at = open_link(realm_name, token)
    if endpoint_id is not None and endpoint.pk != endpoint_id:
        raise LinkRefused("webhookPortalLinkInvalid", 403)
    return endpoint, expires_at


def _with_cookie(request, response, endpoint, token, expires_at):
    """The token in the endpoint's own cookie: script-proof, same-site only, sent to its portal alone."""
    max_age = max(int((expires_at - timezone.now()).total_seconds()), 0)
    response.set_cookie(COOKIE, token, max_age=max_age, path=_base(endpoint.realm.name, endpoint.pk),
                        httponly=True, secure=is_secure(request), samesite="Strict")
    return response


def _over_limit(request, realm_name, key=None):
    """The page of a refusal in words, 429 with ``Retry-After``, when this address has presented
    more links this minute than the realm lets it post its sign-in form (``rateLimit.login.perAddress``,
    decision 0091: a link is the portal's sign-in); None otherwise. An unknown or disabled realm: 404,
    as on every page of a realm (its portal opens nothing)."""
    realm = realm_cache.get_realm(realm_name).realm
    try:
        admission.admit(request, realm, admission.LOGIN)
    except admission.RateLimited as exc:
        response = _refused(request, realm_name, "tooManyRequestsMessage", 429, key=key)
        response["Retry-After"] = str(exc.retry_after)
        return response
    return None


def _old_link(request, realm, token, rest):
    """A link of the old form (the token in the path, so this request's line was logged once): the
    cookie set, then 303 to the token-free address. Only a GET: nothing acts on such a path."""
    if request.method != "GET":
        raise Http404
    limited = _over_limit(request, realm)
    if limited:
        return limited
    try:
        endpoint, expires_at = _opened(request, realm, token)
    except LinkRefused as refused:
        return _refused(request, realm, refused.reason, refused.status)
    response = HttpResponseRedirect(_base(realm, endpoint.pk) + rest)
    response.status_code = 303
    return _with_cookie(request, response, endpoint, token, expires_at)


def _portal_page(view, rest=lambda kwargs: "", opens=False):
    """``view`` behind the endpoint's cookie; ``opens``: its address is the link's, which opens the portal."""
    @csrf_protect
    def wrapper(request, realm, key, *args, **kwargs):
        realm_cache.get_realm(realm)  # an unknown or disabled realm: 404, as on every page of a realm
        if ":" in key:  # a signed token (Django's signatures hold colons; endpoint ids do not)
            return _old_link(request, realm, key, rest(kwargs))
        token = request.COOKIES.get(COOKIE)
        if not token:
            if request.method == "GET" and opens:  # the link: its fragment holds the token
                return _render(request, Realm.objects.filter(name=realm).first(), "webhook-portal-open.html",
                               {"session": _base(realm, key) + "session"})
            return _refused(request, realm, "webhookPortalNoSession", 403, key=key)
        try:
            endpoint, expires_at = _opened(request, realm, token, key)
        except LinkRefused as refused:
            return _refused(request, realm, refused.reason, refused.status, forget=_base(realm, key), key=key)
        who = AuthDetails(realm_id=endpoint.realm_id, client_id=CLIENT, ip_address=client_address(request))
        return view(request, endpoint, expires_at, who, _base(realm, key), *args, **kwargs)
    return wrapper


@csrf_protect
def session(request, realm, key):
    """``POST <endpoint id>/session`` (``token``): the link's token checked as every request checks
    it, then kept in the endpoint's cookie and 303 to the portal. Refused: no cookie, the page in words.
    CSRF-protected as every form here: another site cannot plant its own portal session in a browser.
    Counted against the realm's limit of sign-in posts per address before the token is read."""
    if request.method != "POST":
        raise Http404
    limited = _over_limit(request, realm, key)
    if limited:
        return limited
    try:
        endpoint, expires_at = _opened(request, realm, request.POST.get("token", "").strip(), key)
    except LinkRefused as refused:
        return _refused(request, realm, refused.reason, refused.status, key=key)
    response = HttpResponseRedirect(_base(realm, endpoint.pk))
    response.status_code = 303
    return _with_cookie(request, response, endpoint, request.POST["token"].strip(), expires_at)


def _text(request, realm, key, *params):
    return messages.text(realm, messages.locale_for(request, realm), key, *params)


def _event_type_choices(endpoint):
    chosen = set(endpoint.event_types or ["*"])
    types = catalogue.all_types()
    groups = sorted({t.split(".", 1)[0] + ".*" for t in types})
    return [{"value": value, "checked": value in chosen} for value in ["*", *groups, *types]]


def _parse_local(value):
    """A ``datetime-local`` input's value, read as UTC (the page says so), or None."""
    try:
        parsed = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed


def _act(request, endpoint, who):
    """The overview page's forms. Returns (notice key, shown secret or None); raises WebhookError."""
    action, form = request.POST.get("action"), request.POST
    if action in ("test", "event-types") and payloads.owner_of(endpoint) is not None:
        raise services.WebhookError("webhookPortalEventTypesManaged")  # a stream's: its receiver chooses
    if action == "pause":
        services.update_endpoint(endpoint, who=who, enabled=False)
        return "webhookPortalPaused", None
    if action == "resume":
        services.update_endpoint(endpoint, who=who, enabled=True)
        return "webhookPortalResumed", None
    if action == "test":
        message = services.send_test_event(endpoint)
        _audit(endpoint, who, action="test", eventId=message.pk)
        return "webhookPortalTestSent", None
    if action == "event-types":
        chosen = form.getlist("event_types")
        services.update_endpoint(endpoint, who=who, event_types=[] if "*" in chosen or not chosen else chosen)
        return "webhookPortalEventTypesSaved", None
    if action == "rotate":
        overlap = services.DEFAULT_ROTATION_OVERLAP if form.get("overlap") != "now" else 0
        return "webhookPortalSecretRotated", services.rotate_secret(endpoint, overlap_seconds=overlap, who=who)
    if action == "redeliver-range":
        since, until = _parse_local(form.get("since")), _parse_local(form.get("until"))
        if since is None or until is None:
            raise services.WebhookError("webhookPortalRangeInvalid")
        failed_only = form.get("failed_only") == "on"
        count = services.redeliver_range(endpoint, since, until, failed_only=failed_only)
        _audit(endpoint, who, action="redeliver", since=_iso(since), until=_iso(until), failedOnly=failed_only)
        return ("webhookPortalRedelivered", count), None
    raise services.WebhookError("webhookPortalUnknownAction")


def overview(request, endpoint, expires_at, who, base):
    realm, notice, secret, error, status = endpoint.realm, None, None, None, 200
    if request.method == "POST":
        try:
            notice, secret = _act(request, endpoint, who)
        except services.WebhookError as exc:
            error, status = str(exc), 400
        else:
            if secret is None:  # post, redirect, get: a reload does not act twice
                key, *params = notice if isinstance(notice, tuple) else (notice,)
                return HttpResponseRedirect(f"{base}?done={key}" + (f"&n={params[0]}" if params else ""))
        endpoint.refresh_from_db()
    elif request.method != "GET":
        raise Http404
    done = request.GET.get("done", "")
    if done in NOTICES:
        notice = _text(request, realm, done, request.GET.get("n", "0")) if done == "webhookPortalRedelivered" \
            else _text(request, realm, done)
    elif notice is not None:
        notice = _text(request, realm, notice)
    if error is not None:  # a service's message is already text; our own checks give keys
        error = _text(request, realm, error) if error.startswith("webhookPortal") else error
    state = request.GET.get("state", "")
    page = max(_int(request.GET.get("page"), 1), 1)
    rows = Delivery.objects.filter(endpoint=endpoint).select_related("message").order_by("-created_at", "-id")
    if state in STATES:
        rows = rows.filter(state=state)
    rows = list(rows[(page - 1) * PAGE_SIZE:page * PAGE_SIZE + 1])
    return _render(request, realm, "webhook-portal.html", {
        "endpoint": endpoint, "base": base, "session": base + "session", "expires": when(expires_at, realm),
        "notice": notice, "error": error,
        "secret": secret, "status_key": _status_key(endpoint), "managed": payloads.owner_of(endpoint) is not None,
        "failing_since": when(endpoint.failing_since, realm) if endpoint.failing_since else "",
        "event_types": _event_type_choices(endpoint),
        "deliveries": [{"id": d.message_id, "type": d.message.type, "created": when(d.created_at, realm),
                        "state": d.state, "attempts": d.attempts, "last_status": d.last_status or "",
                        "last_error": d.last_error} for d in rows[:PAGE_SIZE]],
        "state": state, "states": STATES, "page": page, "has_next": len(rows) > PAGE_SIZE,
    }, status=status)


NOTICES = {"webhookPortalPaused", "webhookPortalResumed", "webhookPortalTestSent", "webhookPortalEventTypesSaved",
           "webhookPortalRedelivered", "webhookPortalRedeliveryQueued"}


def _int(value, default):
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _status_key(endpoint):
    if endpoint.enabled:
        return "webhookPortalStatusActive"
    return "webhookPortalStatusDisabled" if endpoint.disabled_reason else "webhookPortalStatusPaused"


def event(request, endpoint, expires_at, who, base, message_id):
    realm = endpoint.realm
    message = Message.objects.filter(pk=message_id, realm_id=endpoint.realm_id,
                                     deliveries__endpoint=endpoint).first()
    if message is None:
        raise Http404("no such event for this endpoint")
    if request.method == "POST":
        services.redeliver_event(endpoint, message.pk)
        _audit(endpoint, who, action="redeliver", eventId=message.pk)
        return HttpResponseRedirect(f"{base}events/{message.pk}?done=webhookPortalRedeliveryQueued")
    if request.method != "GET":
        raise Http404
    sent = Delivery.objects.filter(endpoint=endpoint, message=message).first()
    body = payloads.body_of(message.payload, message.bodies, sent.format)
    try:
        body = json.dumps(json.loads(body), indent=2, ensure_ascii=False)
    except ValueError:
        pass
    attempts = DeliveryAttempt.objects.filter(endpoint=endpoint, message_id=message.pk).order_by("number", "id")
    return _render(request, realm, "webhook-portal-event.html", {
        "endpoint": endpoint, "base": base, "session": base + "session", "expires": when(expires_at, realm),
        "message": message,
        "created": when(message.created_at, realm), "body": body,
        "notice": _text(request, realm, "webhookPortalRedeliveryQueued")
        if request.GET.get("done") == "webhookPortalRedeliveryQueued" else None,
        "delivery": sent,
        "attempts": [{"number": a.number, "started": when(a.started_at, realm), "status": a.status or "",
                      "success": a.success, "duration_ms": a.duration_ms, "response": a.response_body,
                      "error": a.error} for a in attempts],
    })


overview = _portal_page(overview, opens=True)
event = _portal_page(event, rest=lambda kwargs: f"events/{kwargs['message_id']}")
