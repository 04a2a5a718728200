"""Authentication sessions: the server-side state of one sign-in in progress.

A browser holds one ``AUTH_SESSION_ID`` cookie per realm (a random root id); each authorization
request opens a tab (a random tab id carried in the login form's URL), so sign-ins in two
browser tabs do not disturb each other (Keycloak's root/tab authentication sessions). The
record holds the protocol's original request (opaque to the engine), the state of the flow's
steps and the user once identified. It lives in the shared cache and expires after the realm's
``access_code_lifespan_login`` (Keycloak's "Login timeout", 30 minutes by default): a sign-in
left longer starts over. Once the user is identified and only required actions or consent remain,
each of those pages must be answered within ``access_code_lifespan_user_action`` of being shown
(Keycloak's "Login action timeout", 5 minutes by default).
"""
import secrets
import time
from dataclasses import dataclass, field

from django.core.cache import cache

COOKIE = "AUTH_SESSION_ID"


def cookie_path(realm):
    return f"/realms/{realm.name}/"


@dataclass
class AuthSession:
    root_id: str
    tab_id: str
    realm_id: str
    client_pk: str
    protocol: str
    # The protocol's own request (OIDC: redirect_uri, state, nonce, PKCE ...), opaque here.
    client_data: dict
    created: float = field(default_factory=time.time)
    force_login: bool = False
    login_hint: str = ""
    # Steps passed or skipped, by execution path ("0", "3.1" ...), and the step now showing a form.
    executions: dict = field(default_factory=dict)
    current: str = ""
    flow_done: bool = False
    user_id: str = ""
    auth_methods: list = field(default_factory=list)
    remember_me: bool = False
    # The SSO session the Cookie step found; reused instead of a new one.
    sso_session_id: str = ""
    notes: dict = field(default_factory=dict)
    # The binding being run (browser; registration or reset credentials once the user follows
    # the login page's links), and required actions of this sign-in only (an e-mailed link's).
    binding: str = "browser"
    required_actions: list = field(default_factory=list)
    new_root: bool = False  # the browser gets its AUTH_SESSION_ID cookie with this answer
    stored: bool = False  # in the cache (a sign-in answered at once is never written)
    shown: float = 0.0  # when its last page was shown (saved)

    def expired(self, realm) -> bool:
        now = time.time()
        if self.flow_done and now > self.shown + realm.access_code_lifespan_user_action:
            return True
        return now > self.created + realm.access_code_lifespan_login


def _key(root_id, tab_id):
    return f"idp:authsess:{root_id}:{tab_id}"


def _root_key(root_id):
    return f"idp:authroot:{root_id}"


def start(request, realm, client, *, protocol, client_data, force_login=False, login_hint="") -> AuthSession:
    root_id = request.COOKIES.get(COOKIE, "")
    new_root = not (root_id and len(root_id) <= 64 and root_id.replace("-", "").replace("_", "").isalnum())
    if new_root:
        root_id = secrets.token_urlsafe(24)
    auth_session = AuthSession(
        root_id=root_id, tab_id=secrets.token_urlsafe(9), realm_id=realm.pk, client_pk=client.pk,
        protocol=protocol, client_data=dict(client_data), force_login=force_login,
        login_hint=login_hint or "", new_root=new_root,
    )
    # Not written yet: the flow engine saves it when it shows a page, or ends it right away.
    return auth_session


def load(request, realm, tab_id) -> AuthSession | None:
    """The tab's record when this browser owns it and it has not expired; else None."""
    root_id = request.COOKIES.get(COOKIE, "")
    if not root_id or not tab_id:
        return None
    data = cache.get(_key(root_id, tab_id))
    if not data or data.get("realm_id") != realm.pk:
        return None
    auth_session = AuthSession(**data)
    auth_session.stored = True
    if auth_session.expired(realm):
        discard(auth_session)
        return None
    return auth_session


def save(auth_session, realm):
    if not (auth_session.stored or auth_session.new_root) and not cache.get(_root_key(auth_session.root_id)):
        # A root id the browser brought that this server does not hold (chosen by someone else:
        # session fixation) is replaced. Checked here, when a page is shown, so an answer given at
        # once (SSO) costs no cache read.
        auth_session.root_id, auth_session.new_root = secrets.token_urlsafe(24), True
    auth_session.shown = time.time()
    # A shallow copy is enough: pickling copies the nested dicts and lists.
    data = {**vars(auth_session), "new_root": False}
    # The root outlives each of its tabs: marked live for a whole login timeout from the last save.
    # The tab is kept as long (``load`` refuses it once expired), so both go in one round trip.
    cache.set_many({_key(auth_session.root_id, auth_session.tab_id): data, _root_key(auth_session.root_id): 1},
                   realm.access_code_lifespan_login + 1)
    auth_session.stored = True


def discard(auth_session):
    if auth_session.stored:
        cache.delete(_key(auth_session.root_id, auth_session.tab_id))
        auth_session.stored = False


def set_cookie(response, request, realm, auth_session):
    if auth_session.new_root:
        response.set_cookie(COOKIE, auth_session.root_id, path=cookie_path(realm), httponly=True,
                            secure=request.is_secure(), samesite="Lax")
    return response
