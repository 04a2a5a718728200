"""The ``oauth2``, ``oidc`` and ``keycloak-oidc`` identity provider types: what the broker
(``realms.brokering.broker``) calls.

A sign-in: ``login`` redirects to ``authorizationUrl`` with the broker's state (and, for OpenID
Connect, a nonce; a PKCE challenge where ``pkceEnabled``), keeping the nonce and verifier in the
trip's notes. The provider answers at the broker endpoint with ``code`` and ``state``;
``authenticated`` exchanges the code (``client``), checks the ID token (``jose``), reads userinfo
and returns the ``BrokeredIdentity``. A provider's ``error`` answer is a ``BrokerError``; the
person reads our message, never the provider's text.

``OAuth2Type`` is Keycloak 26's generic "OAuth v2": no ID token, the user read from userinfo by
the configured claim paths. The social presets (``social``) are subclasses that declare their
endpoints and read their own userinfo shapes."""
import base64
import hashlib
import json
import re
import secrets
from urllib.parse import urlencode

from django.http import HttpResponseRedirect

from realms.brokering.providers import BrokeredIdentity, BrokerError, ProviderType
from realms.data.crypto import constant_time_equals

from . import client, config, exchange, jose, logout
from .config import Settings, read_claim
from .logout import ID_TOKEN_NOTE, SID_NOTE, SUB_NOTE

# The trip's notes. The SSO session's (logout): the provider's ID token (Keycloak's
# FEDERATED_ID_TOKEN), and the sub and sid its back-channel logout names.
NONCE, VERIFIER = "nonce", "code_verifier"


def with_query(url, params):
    return url + ("&" if "?" in url else "?") + urlencode(params)


def pkce_challenge(verifier, method):
    if method == "plain":
        return verifier
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def split_name(name):
    """Keycloak's BrokeredIdentityContext.setName: first name up to the first space, the rest last."""
    first, _, last = (name or "").strip().partition(" ")
    return first, last.strip()


class OAuth2Type(ProviderType):
    provider_id = "oauth2"
    name = "OAuth v2"
    oidc = False
    default_scope = ""
    # Where the user's fields are in userinfo (Keycloak 26's OAuth v2 defaults; config overrides).
    claim_defaults = {"userIDClaim": "sub", "userNameClaim": "preferred_username", "emailClaim": "email",
                      "fullNameClaim": "name", "givenNameClaim": "given_name", "familyNameClaim": "family_name"}

    # -- configuration ----------------------------------------------------------------------

    def settings(self, idp):
        return Settings(idp)

    def clean_config(self, data):
        return config.clean(data, oidc=self.oidc, required=("authorizationUrl", "tokenUrl", "clientId", "userInfoUrl"))

    def scope(self, settings):
        return settings.get("defaultScope", self.default_scope)

    def endpoint_url(self, settings, key):
        return settings.get(key)

    # -- the trip to the provider -----------------------------------------------------------

    def authorization_params(self, settings, broker):
        params = {"response_type": "code", "client_id": settings.get("clientId"),
                  "redirect_uri": broker.redirect_uri, "state": broker.state}
        scope = self.scope(settings)
        if scope:
            params["scope"] = scope
        if settings.flag("pkceEnabled"):
            verifier = secrets.token_urlsafe(48)
            broker.notes[VERIFIER] = verifier
            params.update(code_challenge=pkce_challenge(verifier, settings.pkce_method),
                          code_challenge_method=settings.pkce_method)
        if settings.flag("loginHint") and broker.login_hint:
            params["login_hint"] = broker.login_hint
        if settings.flag("uiLocales") and broker.locale:
            params["ui_locales"] = broker.locale
        prompt = settings.get("prompt") or broker.prompt
        if prompt == "none" and not settings.get("prompt") and not settings.flag("acceptsPromptNoneForwardFromClient"):
            prompt = ""
        if prompt and prompt != "unspecified":
            params["prompt"] = prompt
        if settings.flag("passMaxAge") and broker.max_age:
            params["max_age"] = broker.max_age
        return params

    def login(self, request, realm, idp, broker):
        settings = self.settings(idp)
        url = self.endpoint_url(settings, "authorizationUrl")
        if not url:
            raise BrokerError(detail="authorizationUrl is not configured")
        return HttpResponseRedirect(with_query(url, self.authorization_params(settings, broker)))

    def state_of(self, request):
        params = request.POST if request.method == "POST" else request.GET
        return params.get("state", "")

    def _code(self, request):
        params = request.POST if request.method == "POST" else request.GET
        error = params.get("error")
        if error:
            # The provider's own words go to the log only; a person who refused there is told so
            # (and an account-linking action reports itself cancelled, as Keycloak's).
            denied = error == "access_denied"
            raise BrokerError("accessDeniedWhenIdpAuth" if denied else "identityProviderUnexpectedErrorMessage",
                              "access_denied" if denied else "identity_provider_error",
                              f"the provider answered {error}: {params.get('error_description', '')[:200]}")
        code = params.get("code", "")
        if not code:
            raise BrokerError("identityProviderUnexpectedErrorMessage", "identity_provider_error", "no code")
        return code

    def exchange(self, request, realm, idp, settings, broker):
        """The token response for the answer's code."""
        form = {"grant_type": "authorization_code", "code": self._code(request), "redirect_uri": broker.redirect_uri}
        if broker.notes.get(VERIFIER):
            form[VERIFIER] = broker.notes[VERIFIER]
        tokens = client.token_request(realm, self.settings_for_token(settings), form)
        if not isinstance(tokens.get("access_token"), str) or not tokens["access_token"]:
            raise client.unexpected("the token response has no access_token")
        return tokens

    def settings_for_token(self, settings):
        return settings

    def authenticated(self, request, realm, idp, broker):
        settings = self.settings(idp)
        tokens = self.exchange(request, realm, idp, settings, broker)
        profile = self.profile(settings, tokens)
        identity = self.identity(idp, settings, profile, tokens)
        if not identity.id:
            raise client.unexpected("the provider's answer names no user id")
        identity.token = json.dumps(tokens) if idp.store_token else ""
        return identity

    # -- the user ---------------------------------------------------------------------------

    def profile(self, settings, tokens):
        """What the provider says of the user (its userinfo JSON)."""
        info = client.userinfo(settings, tokens["access_token"], self.endpoint_url(settings, "userInfoUrl"))
        if not isinstance(info, dict):
            raise client.unexpected("the userinfo answer is not JSON")
        return info

    def identity(self, idp, settings, profile, tokens):
        def claim(key):
            value = read_claim(profile, settings.get(key, self.claim_defaults[key]))
            return "" if value is None or isinstance(value, (dict, list)) else str(value)

        email = claim("emailClaim")
        first, last = claim("givenNameClaim"), claim("familyNameClaim")
        if not first and not last:
            first, last = split_name(claim("fullNameClaim"))
        user_id = claim("userIDClaim")
        return BrokeredIdentity(id=user_id, username=claim("userNameClaim") or email or user_id, email=email,
                                email_verified=bool(email) and idp.trust_email, first_name=first, last_name=last,
                                claims=dict(profile))


class OidcType(OAuth2Type):
    """Keycloak's "OpenID Connect v1.0" (``oidc``)."""

    provider_id = "oidc"
    name = "OpenID Connect v1.0"
    oidc = True
    default_scope = "openid"

    def clean_config(self, data):
        return config.clean(data, oidc=True)

    def import_config(self, data):
        return config.from_discovery(data)

    def scope(self, settings):
        scope = settings.get("defaultScope", self.default_scope)
        return scope if "openid" in scope.split() else f"openid {scope}".strip()

    def authorization_params(self, settings, broker):
        params = super().authorization_params(settings, broker)
        if not settings.flag("disableNonce"):
            broker.notes[NONCE] = params["nonce"] = secrets.token_urlsafe(24)
        return params

    def authenticated(self, request, realm, idp, broker):
        settings = self.settings(idp)
        tokens = self.exchange(request, realm, idp, settings, broker)
        id_token = tokens.get("id_token")
        if not isinstance(id_token, str) or not id_token:
            raise client.unexpected("the token response has no id_token")
        nonce = "" if settings.flag("disableNonce") else broker.notes.get(NONCE, "")
        if not settings.flag("disableNonce") and not nonce:
            raise jose.invalid("no nonce was sent on this trip", "invalid_nonce")
        claims = jose.check_id_token(id_token, settings, nonce)
        info = self.userinfo(settings, tokens, claims)
        merged = {**claims, **info}
        self.check_claim_filter(settings, merged)
        identity = self.identity(idp, settings, merged, tokens)
        identity.id = claims["sub"]
        identity.token = json.dumps(tokens) if idp.store_token else ""
        identity.session_notes = {ID_TOKEN_NOTE: id_token, SUB_NOTE: claims["sub"]}
        if isinstance(claims.get("sid"), str):
            identity.session_notes[SID_NOTE] = claims["sid"]
        return identity

    def exchange_external_token(self, realm, idp, token, token_type):
        return exchange.external_identity(self, idp, self.settings(idp), token, token_type)

    def check_claim_filter(self, settings, claims):
        """``filteredByClaim``: only a user whose claim ``claimFilterName`` (or one of its values)
        matches the regular expression ``claimFilterValue`` in full may sign in."""
        if not settings.flag("filteredByClaim"):
            return
        name, pattern = settings.get("claimFilterName"), settings.get("claimFilterValue")
        value = read_claim(claims, name)
        values = [str(v).lower() if isinstance(v, bool) else str(v)
                  for v in (value if isinstance(value, list) else [value]) if v is not None]
        if not any(re.fullmatch(pattern, v) for v in values):
            raise BrokerError("identityProviderUnexpectedErrorMessage", "invalid_claim",
                              f"the claim {name} does not match the configured filter")

    def userinfo(self, settings, tokens, claims):
        """Userinfo's claims, read when the ID token lacks some of the user's (Keycloak's rule) and
        userinfo is neither switched off nor unknown; its ``sub`` must be the ID token's."""
        url = self.endpoint_url(settings, "userInfoUrl")
        complete = all(claims.get(k) for k in ("name", "preferred_username", "email"))
        if settings.flag("disableUserInfo") or not url or complete:
            return {}
        info = client.userinfo(settings, tokens["access_token"], url)
        if isinstance(info, str):  # a signed userinfo JWT
            info = jose.checked_claims(info, settings)
        if not isinstance(info, dict):
            raise client.unexpected("the userinfo answer is not a JSON object")
        if not constant_time_equals(str(info.get("sub", "")), claims["sub"]):
            raise jose.invalid("userinfo's sub is not the ID token's", "invalid_userinfo")
        return info

    def identity(self, idp, settings, profile, tokens):
        email = profile.get("email") if isinstance(profile.get("email"), str) else ""
        first = profile.get("given_name") if isinstance(profile.get("given_name"), str) else ""
        last = profile.get("family_name") if isinstance(profile.get("family_name"), str) else ""
        if not first and not last and isinstance(profile.get("name"), str):
            first, last = split_name(profile["name"])
        username = profile.get("preferred_username")
        username = username if isinstance(username, str) and username else email or str(profile.get("sub", ""))
        verified = profile.get("email_verified") in (True, "true")
        return BrokeredIdentity(id=str(profile.get("sub", "")), username=username, email=email,
                                email_verified=bool(email) and idp.trust_email and verified, first_name=first,
                                last_name=last, claims=dict(profile))

    # -- logout -----------------------------------------------------------------------------

    def endpoint(self, request, realm, idp, rest):
        if rest == logout.BACKCHANNEL_PATH:
            return logout.backchannel_request(request, realm, idp, self.settings(idp))
        return None

    def logout_url(self, request, realm, idp, notes, return_url):
        return logout.logout_url(self.settings(idp), notes, return_url)

    def backchannel_logout(self, realm, idp, notes):
        logout.backchannel_logout(self.settings(idp), notes)


class KeycloakOidcType(OidcType):
    """Keycloak's ``keycloak-oidc``: OpenID Connect against another Keycloak; the same checks, and
    Keycloak's extra: that Keycloak's own back-channel logout at ``endpoint/k_logout``."""

    provider_id = "keycloak-oidc"
    name = "Keycloak OpenID Connect"

    def endpoint(self, request, realm, idp, rest):
        if rest == logout.K_LOGOUT_PATH:
            return logout.keycloak_logout_request(request, realm, idp, self.settings(idp))
        return super().endpoint(request, realm, idp, rest)
