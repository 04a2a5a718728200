"""The ``twitter`` (X) preset: Keycloak signs in with X over OAuth 1.0a (RFC 5849), not OAuth 2,
so this type does the three OAuth 1.0a legs itself, every request signed HMAC-SHA1 with the
consumer key and secret (Keycloak's ``clientId`` and ``clientSecret``):

1. ``login``: our server asks for a request token (``oauth_callback`` = the broker endpoint with
   the broker's state) and sends the browser to X's authenticate page with it; the token's
   secret stays in the trip's notes.
2. X sends the browser back with ``oauth_token`` and ``oauth_verifier`` (the state is on our own
   callback URL); ``authenticated`` checks the token is the one of this trip and exchanges it for
   an access token.
3. ``verify_credentials`` (with ``include_email``) says who the user is.

The endpoints are built in (``IDP_BROKER_PRESET_URLS`` moves them for tests, as for any preset)."""
import base64
import hashlib
import hmac
import json
import secrets
import time
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from django.http import HttpResponseRedirect

from realms.brokering.providers import BrokeredIdentity, BrokerError, ProviderType
from realms.data.crypto import constant_time_equals

from . import client, config
from .config import Settings
from .provider import split_name
from .social import moved

REQUEST_TOKEN_URL = "https://api.twitter.com/oauth/request_token"
AUTHENTICATE_URL = "https://api.twitter.com/oauth/authenticate"
ACCESS_TOKEN_URL = "https://api.twitter.com/oauth/access_token"
VERIFY_URL = "https://api.twitter.com/1.1/account/verify_credentials.json"
TOKEN, TOKEN_SECRET = "oauth_token", "oauth_token_secret"  # the trip's notes


def _enc(value):
    return quote(str(value), safe="~-._")


def signed_header(method, url, consumer_key, consumer_secret, token="", token_secret="", params=None, extra=None):
    """RFC 5849's Authorization header for a request (HMAC-SHA1): the signature base string of the
    method, the URL without its query, and every parameter (query, form, oauth_*) sorted."""
    oauth = {"oauth_consumer_key": consumer_key, "oauth_nonce": secrets.token_hex(16),
             "oauth_signature_method": "HMAC-SHA1", "oauth_timestamp": str(int(time.time())), "oauth_version": "1.0",
             **(extra or {})}
    if token:
        oauth["oauth_token"] = token
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True) + list((params or {}).items()) + list(oauth.items())
    normalized = "&".join(f"{k}={v}" for k, v in sorted((_enc(k), _enc(v)) for k, v in pairs))
    base_url = urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, "", ""))
    base = "&".join((method.upper(), _enc(base_url), _enc(normalized)))
    key = f"{_enc(consumer_secret)}&{_enc(token_secret)}".encode()
    oauth["oauth_signature"] = base64.b64encode(hmac.new(key, base.encode(), hashlib.sha1).digest()).decode()
    return "OAuth " + ", ".join(f'{_enc(k)}="{_enc(v)}"' for k, v in sorted(oauth.items()))


class TwitterType(ProviderType):
    provider_id, name, social = "twitter", "Twitter", True

    def clean_config(self, data):
        cleaned = config.clean(data, oidc=False, required=("clientId", "clientSecret"), preset=self.provider_id)
        # OAuth 1.0a has no scope, PKCE, prompt or hints: only the consumer key and secret apply.
        extra = set(cleaned) - {"clientId", "clientSecret", *config.GENERIC}
        if any(cleaned[k] not in ("", config.FALSE) for k in extra):
            raise ValueError(f"Unsupported configuration for a twitter identity provider: {', '.join(sorted(extra))}")
        return cleaned

    def _post_form(self, settings, url, token="", token_secret="", extra=None, params=None):
        header = signed_header("POST", url, settings.get("clientId"), settings.get("clientSecret"), token,
                               token_secret, params, extra)
        status, _, body = client.call("POST", url, body=urlencode(params or {}), headers={
            "Authorization": header, "Content-Type": "application/x-www-form-urlencoded"})
        if status != 200:
            raise client.unexpected(f"{client.shown_url(url)} answered {status}")
        return dict(parse_qsl(body.decode(errors="replace")))

    def login(self, request, realm, idp, broker):
        settings = Settings(idp)
        callback = f"{broker.redirect_uri}?{urlencode({'state': broker.state})}"
        answer = self._post_form(settings, moved(self.provider_id, REQUEST_TOKEN_URL),
                                 extra={"oauth_callback": callback})
        if answer.get("oauth_callback_confirmed") != "true" or not answer.get(TOKEN):
            raise client.unexpected("X did not confirm the callback of the request token")
        broker.notes.update({TOKEN: answer[TOKEN], TOKEN_SECRET: answer.get(TOKEN_SECRET, "")})
        return HttpResponseRedirect(f"{moved(self.provider_id, AUTHENTICATE_URL)}?{urlencode({TOKEN: answer[TOKEN]})}")

    def state_of(self, request):
        return request.GET.get("state", "")

    def authenticated(self, request, realm, idp, broker):
        if request.GET.get("denied"):
            raise BrokerError("accessDeniedWhenIdpAuth", "access_denied", "the user denied access")
        token, verifier = request.GET.get(TOKEN, ""), request.GET.get("oauth_verifier", "")
        if not token or not verifier or not constant_time_equals(token, broker.notes.get(TOKEN, "")):
            raise BrokerError("identityProviderUnexpectedErrorMessage", "invalid_token",
                              "the answer's oauth_token is not the one of this sign-in")
        settings = Settings(idp)
        access = self._post_form(settings, moved(self.provider_id, ACCESS_TOKEN_URL), token,
                                 broker.notes.get(TOKEN_SECRET, ""), extra={"oauth_verifier": verifier})
        if not access.get(TOKEN):
            raise client.unexpected("X answered no access token")
        url = f"{moved(self.provider_id, VERIFY_URL)}?include_email=true"
        header = signed_header("GET", url, settings.get("clientId"), settings.get("clientSecret"), access[TOKEN],
                               access.get(TOKEN_SECRET, ""))
        status, _, body = client.call("GET", url, headers={"Authorization": header, "Accept": "application/json"})
        if status != 200:
            raise client.unexpected(f"verify_credentials answered {status}")
        try:
            profile = json.loads(body)
        except ValueError:
            raise client.unexpected("verify_credentials did not answer JSON") from None
        if not isinstance(profile, dict) or not profile.get("id_str"):
            raise client.unexpected("verify_credentials named no user")
        email = profile.get("email") if isinstance(profile.get("email"), str) else ""
        first, last = split_name(profile.get("name") if isinstance(profile.get("name"), str) else "")
        token_json = json.dumps({TOKEN: access[TOKEN], TOKEN_SECRET: access.get(TOKEN_SECRET, ""),
                                 "screen_name": access.get("screen_name", "")})
        return BrokeredIdentity(id=profile["id_str"], username=str(profile.get("screen_name") or profile["id_str"]),
                                email=email, email_verified=bool(email) and idp.trust_email, first_name=first,
                                last_name=last, claims=profile, token=token_json if idp.store_token else "")
