"""Back-channel logout (OpenID Connect Back-Channel Logout 1.0).

When an SSO session ends (``realms.sso.sessions.session_ended``), every OIDC client of the session
that registered ``backchannel.logout.url`` gets a signed logout token POSTed to its back end,
after the transaction commits (a rolled-back logout tells nobody). Session expiry is not a
sign-out and is not propagated (Keycloak does the same).

The URL comes from whoever can edit a client, so it is called under the outbound address policy
(``realms.http.outbound``): resolved once, public addresses only unless allowlisted (dev mode: loopback),
connected to the checked address, no redirects, short timeouts.
"""
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode, urlsplit

from django.db import transaction

from realms.data.keys import realm_keys
from realms.http import outbound
from realms.http.web import realm_url
from realms.sso import sessions

from . import jose, realm_cache

logger = logging.getLogger("idp.logout")

EVENT = "http://schemas.openid.net/event/backchannel-logout"
TYP = "logout+jwt"
TOKEN_LIFETIME = 120
CONNECT_TIMEOUT, TIMEOUT = 2.0, 3.0
ISSUER_NOTE = "iss"  # client session note: the issuer the client got its tokens from


def issuer_of(client_session):
    """The issuer this client knows the realm by: noted at sign-in, else the configured base URL."""
    noted = (client_session.notes or {}).get(ISSUER_NOTE)
    if noted:
        return noted
    return realm_url(None, client_session.user_session.realm.name)


def logout_token(realm, *, issuer, client_id, user_id, sid):
    now = int(time.time())
    claims = {"iss": issuer, "aud": client_id, "iat": now, "exp": now + TOKEN_LIFETIME,
              "jti": str(uuid.uuid4()), "sub": user_id, "sid": sid, "events": {EVENT: {}}}
    alg = realm.default_signature_algorithm
    kid, key = realm_keys(realm).signer(alg)
    return jose.sign(claims, alg=alg, key=key, kid=kid, typ=TYP)


def post_logout_token(url, token):
    """POST ``logout_token=<token>``; True on a 2xx answer. Never raises."""
    try:
        response = outbound.post(url, urlencode({"logout_token": token}).encode(),
                                 {"Content-Type": "application/x-www-form-urlencoded"},
                                 timeout=TIMEOUT, connect_timeout=CONNECT_TIMEOUT)
        if 200 <= response.status < 300:
            return True
        logger.warning("back-channel logout to %s answered HTTP %s", urlsplit(url).hostname, response.status)
    except (outbound.TargetRefused, outbound.HTTPError, ValueError) as exc:
        logger.warning("back-channel logout to %s failed: %s", urlsplit(url).hostname, exc.__class__.__name__)
    return False


def pending_notifications(user_session, client_sessions):
    """(url, token) for each OIDC client of the session with a back-channel logout URL."""
    realm = user_session.realm
    out = []
    for client_session in client_sessions:
        client = client_session.client
        url = (client.attributes or {}).get("backchannel.logout.url", "")
        if client.protocol != "openid-connect" or not url:
            continue
        client_session.user_session = user_session
        issuer = issuer_of(client_session)
        if not issuer:
            logger.warning("back-channel logout of %s skipped: issuer unknown", client.client_id)
            continue
        config = realm_cache.get_realm(realm.name).client(client.client_id)
        subject = config.subject(user_session.user_id) if config is not None else user_session.user_id
        out.append((url, logout_token(realm, issuer=issuer, client_id=client.client_id,
                                      user_id=subject, sid=user_session.pk)))
    return out


def send_all(notifications):
    if not notifications:
        return []
    with ThreadPoolExecutor(max_workers=min(8, len(notifications))) as pool:
        return list(pool.map(lambda n: post_logout_token(*n), notifications))


def on_session_ended(sender, user_session, client_sessions, reason, **kwargs):
    if reason == sessions.REASON_EXPIRED:
        return
    notifications = pending_notifications(user_session, client_sessions)
    if notifications:
        transaction.on_commit(lambda: send_all(notifications))


def connect_signals():
    """Back-channel logout when an SSO session ends; called from ``OidcConfig.ready``."""
    sessions.session_ended.connect(on_session_ended, dispatch_uid="oidc-backchannel-logout")
