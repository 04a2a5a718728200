"""Social identity providers: Keycloak's presets, each a small declaration over the OAuth 2 and
OpenID Connect machinery (``provider``): its provider id, its endpoints, its default scope and
how its user document reads. The OpenID Connect ones (Google, GitLab, LinkedIn) check the ID
token against the provider's published keys and issuer like any ``oidc`` provider.

An admin configures only the client (``clientId``, ``clientSecret``, ``defaultScope``) and the
preset's own keys (Google's ``hostedDomain`` ...); the endpoints are built in, so the endpoint
keys are refused. Only GitHub has Keycloak's own keys to move it (``baseUrl``, ``apiUrl``: GitHub
Enterprise).

Tests and development point a preset at a loopback server with the setting
``IDP_BROKER_PRESET_URLS`` ({provider id: {built-in URL: replacement}}). A replacement must be a
loopback URL (``http://127.0.0.1:...``, ``http://localhost:...``, ``[::1]``); anything else is
refused when used, so the setting cannot send a production sign-in elsewhere (and the outbound
client refuses loopback in production anyway)."""
import ipaddress
import json
import time
from urllib.parse import urlencode, urlsplit

from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured

from realms.brokering.providers import BrokeredIdentity, BrokerError
from realms.http import themes
from realms.http.web import is_cross_site
from realms.sso import auth_sessions

from . import client, config, jose
from .config import Settings
from .provider import OAuth2Type, OidcType, split_name


def _loopback(url):
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def moved(provider_id, url):
    """``url`` as ``IDP_BROKER_PRESET_URLS`` moves it for tests (a loopback server), else itself."""
    table = (getattr(django_settings, "IDP_BROKER_PRESET_URLS", None) or {}).get(provider_id) or {}
    for original, replacement in table.items():
        if url == original or url.startswith(original + "?") or url.startswith(original + "/"):
            if not _loopback(replacement):
                raise ImproperlyConfigured("IDP_BROKER_PRESET_URLS may only point a social provider at a loopback "
                                           f"test server, not {replacement}")
            return replacement + url[len(original):]
    return url


class SocialMixin:
    """What every preset shares: built-in endpoints (``urls``), a fixed config overlay, and the
    config keys an admin may set."""

    social = True
    urls = {}
    extra = ()
    extra_booleans = ()

    def clean_config(self, data):
        return config.clean(data, oidc=self.oidc, extra=self.extra, extra_booleans=self.extra_booleans,
                            required=("clientId",), preset=self.provider_id)

    def built_in(self, settings):
        """The config keys this preset fixes (its endpoints; for OIDC its issuer and keys)."""
        return dict(self.urls)

    def settings(self, idp):
        settings = Settings(idp)
        fixed = {k: moved(self.provider_id, v) if k.endswith("Url") or k == "issuer" else v
                 for k, v in self.built_in(settings).items()}
        settings.config = {**settings.config, **fixed}
        return settings

    def scope(self, settings):
        return settings.get("defaultScope", self.default_scope)


def _text(data, key):
    value = data.get(key) if isinstance(data, dict) else None
    return "" if value is None or isinstance(value, (dict, list)) else str(value)


# OpenID Connect presets ------------------------------------------------------------------------

class GoogleType(SocialMixin, OidcType):
    provider_id, name = "google", "Google"
    default_scope = "openid profile email"
    urls = {"authorizationUrl": "https://accounts.google.com/o/oauth2/v2/auth",
            "tokenUrl": "https://oauth2.googleapis.com/token",
            "userInfoUrl": "https://openidconnect.googleapis.com/v1/userinfo",
            "jwksUrl": "https://www.googleapis.com/oauth2/v3/certs", "issuer": "https://accounts.google.com",
            "validateSignature": "true", "useJwksUrl": "true"}
    extra = ("hostedDomain",)
    extra_booleans = ("offlineAccess",)

    def authorization_params(self, settings, broker):
        params = super().authorization_params(settings, broker)
        if settings.get("hostedDomain"):
            params["hd"] = settings.get("hostedDomain").split(",")[0].strip()
        if settings.flag("offlineAccess"):
            params["access_type"] = "offline"
        return params

    def authenticated(self, request, realm, idp, broker):
        identity = super().authenticated(request, realm, idp, broker)
        domains = [d.strip() for d in self.settings(idp).get("hostedDomain").split(",") if d.strip()]
        # Keycloak: with hostedDomain set, the ID token's hd claim must be one of them ("*": any).
        if domains and "*" not in domains and identity.claims.get("hd") not in domains:
            raise jose.invalid(f"hosted domain {identity.claims.get('hd')!r} is not one of {domains}", "invalid_hd")
        return identity


class GitLabType(SocialMixin, OidcType):
    provider_id, name = "gitlab", "GitLab"
    default_scope = "openid read_user"
    urls = {"authorizationUrl": "https://gitlab.com/oauth/authorize", "tokenUrl": "https://gitlab.com/oauth/token",
            "userInfoUrl": "https://gitlab.com/api/v4/user", "jwksUrl": "https://gitlab.com/oauth/discovery/keys",
            "issuer": "https://gitlab.com", "validateSignature": "true", "useJwksUrl": "true"}

    def userinfo(self, settings, tokens, claims):
        """GitLab's user API (``id``, ``username``, ``name``, ``email``), read on every sign-in; its
        ``id`` must be the ID token's ``sub``."""
        info = client.userinfo(settings, tokens["access_token"], settings.get("userInfoUrl"))
        if not isinstance(info, dict) or _text(info, "id") != claims["sub"]:
            raise jose.invalid("GitLab's user is not the ID token's sub", "invalid_userinfo")
        return info

    def identity(self, idp, settings, profile, tokens):
        identity = super().identity(idp, settings, profile, tokens)
        identity.username = _text(profile, "username") or identity.username
        return identity


class LinkedInType(SocialMixin, OidcType):
    provider_id, name = "linkedin-openid-connect", "LinkedIn"
    default_scope = "openid profile email"
    urls = {"authorizationUrl": "https://www.linkedin.com/oauth/v2/authorization",
            "tokenUrl": "https://www.linkedin.com/oauth/v2/accessToken",
            "userInfoUrl": "https://api.linkedin.com/v2/userinfo",
            "jwksUrl": "https://www.linkedin.com/oauth/openid/jwks", "issuer": "https://www.linkedin.com/oauth",
            "validateSignature": "true", "useJwksUrl": "true"}


class AppleType(SocialMixin, OidcType):
    """Sign in with Apple (Keycloak's ``apple``): OpenID Connect whose answer comes as a form POST
    (``response_mode=form_post``) carrying, on the first sign-in only, the user's name in a
    ``user`` JSON field, and whose client secret is a JWT the developer signs with their Apple
    key (``clientSecret``: checked unexpired before use, as Keycloak's isValidSecret).

    Keycloak can also make that JWT itself from ``teamId``, ``keyId`` and the ``p8Content`` private
    key; here ``p8Content`` would be stored unsealed (only ``clientSecret`` is sealed at rest), so
    those keys are refused until it is sealed too.

    Apple's POST is cross-site: the browser does not send our ``SameSite=Lax`` AUTH_SESSION_ID
    cookie with it. ``endpoint`` answers such a POST with our own page that posts the same fields
    again, same-origin (the SAML type's way; the fields are only echoed, then checked in full)."""

    provider_id, name = "apple", "Apple"
    default_scope = "openid name email"
    urls = {"authorizationUrl": "https://appleid.apple.com/auth/authorize?response_mode=form_post",
            "tokenUrl": "https://appleid.apple.com/auth/token", "jwksUrl": "https://appleid.apple.com/auth/keys",
            "issuer": "https://appleid.apple.com", "validateSignature": "true", "useJwksUrl": "true",
            "clientAuthMethod": "client_secret_post", "disableUserInfo": "true"}

    def clean_config(self, data):
        data = dict(data or {})
        for key in ("p8Content", "teamId", "keyId"):
            if data.get(key):
                raise ValueError(f"{key}: generating Apple's client secret is not supported by this server (the "
                                 "private key would not be sealed at rest); put the signed client secret JWT in "
                                 "clientSecret")
        cleaned = super().clean_config(data)
        if not cleaned.get("clientSecret"):
            raise ValueError("clientSecret is required (the client secret JWT signed with your Apple key)")
        return cleaned

    def settings(self, idp):
        settings = super().settings(idp)
        try:
            claims = jose.unverified_claims(settings.get("clientSecret"))
        except BrokerError:
            claims = None
        if not claims or not isinstance(claims.get("exp"), (int, float)) or claims["exp"] < time.time():
            raise client.unexpected("Apple's client secret is not an unexpired JWT")
        return settings

    def endpoint(self, request, realm, idp, rest):
        if rest == "" and request.method == "POST" and auth_sessions.COOKIE not in request.COOKIES \
                and is_cross_site(request):
            fields = [(k, request.POST[k]) for k in ("state", "code", "user", "error") if k in request.POST]
            return themes.render(request, realm, "form-post.html", {"action": request.path, "fields": fields})
        return super().endpoint(request, realm, idp, rest)

    def authenticated(self, request, realm, idp, broker):
        identity = super().authenticated(request, realm, idp, broker)
        try:
            user = json.loads(request.POST.get("user") or "{}")
        except ValueError:
            user = {}
        if isinstance(user, dict):
            name = user.get("name") if isinstance(user.get("name"), dict) else {}
            identity.first_name = _text(name, "firstName") or identity.first_name
            identity.last_name = _text(name, "lastName") or identity.last_name
            identity.claims = {**identity.claims, "user": user}
        return identity


# OAuth 2 presets ------------------------------------------------------------------------------

class OAuthPreset(SocialMixin, OAuth2Type):
    def identity_of(self, profile):
        """(id, username, email, first name, last name) from the provider's user document."""
        raise NotImplementedError

    def identity(self, idp, settings, profile, tokens):
        user_id, username, email, first, last = self.identity_of(profile)
        return BrokeredIdentity(id=user_id, username=username or email or user_id, email=email,
                                email_verified=bool(email) and idp.trust_email, first_name=first, last_name=last,
                                claims=dict(profile))


class GitHubType(OAuthPreset):
    provider_id, name = "github", "GitHub"
    default_scope = "user:email"
    extra = ("baseUrl", "apiUrl")
    extra_booleans = ("githubJsonFormat",)

    def built_in(self, settings):
        base = (settings.get("baseUrl") or "https://github.com").rstrip("/")
        api = (settings.get("apiUrl") or "https://api.github.com").rstrip("/")
        return {"authorizationUrl": f"{base}/login/oauth/authorize", "tokenUrl": f"{base}/login/oauth/access_token",
                "userInfoUrl": f"{api}/user", "emailUrl": f"{api}/user/emails"}

    def clean_config(self, data):
        cleaned = super().clean_config(data)
        for key in ("baseUrl", "apiUrl"):
            if cleaned.get(key):
                config._url(key, cleaned[key])
        return cleaned

    def profile(self, settings, tokens):
        """GitHub's user; without a public e-mail, the primary one of the user's e-mail list."""
        info = super().profile(settings, tokens)
        if not _text(info, "email"):
            emails = client.userinfo(settings, tokens["access_token"], settings.get("emailUrl"))
            primary = [e for e in emails if isinstance(e, dict) and e.get("primary")] if isinstance(emails, list) else []
            if not primary:
                raise client.unexpected("Primary email from github is not found in the user's email list.")
            info = {**info, "email": primary[0].get("email")}
        return info

    def identity_of(self, profile):
        first, last = split_name(_text(profile, "name"))
        return _text(profile, "id"), _text(profile, "login"), _text(profile, "email"), first, last


class FacebookType(OAuthPreset):
    provider_id, name = "facebook", "Facebook"
    default_scope = "email"
    extra = ("fetchedFields",)
    FIELDS = "id,name,email,first_name,last_name"

    def built_in(self, settings):
        fields = self.FIELDS
        extra = [f.strip() for f in settings.get("fetchedFields").split(",") if f.strip()]
        if extra:
            fields += "," + ",".join(extra)
        return {"authorizationUrl": "https://graph.facebook.com/oauth/authorize",
                "tokenUrl": "https://graph.facebook.com/oauth/access_token",
                "userInfoUrl": f"https://graph.facebook.com/me?fields={fields}"}

    def identity_of(self, profile):
        email = _text(profile, "email")
        first, last = _text(profile, "first_name"), _text(profile, "last_name")
        user_id = _text(profile, "id")
        return user_id, _text(profile, "username") or email or user_id, email, first, last


class MicrosoftType(OAuthPreset):
    """Microsoft's OAuth 2 with the Graph API's ``/me`` (as Keycloak: not its OpenID Connect)."""

    provider_id, name = "microsoft", "Microsoft"
    default_scope = "User.read"
    extra = ("tenantId",)

    def built_in(self, settings):
        tenant = settings.get("tenantId").strip() or "common"
        return {"authorizationUrl": f"https://login.microsoftonline.com/{tenant}/oauth2/v2.0/authorize",
                "tokenUrl": f"https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token",
                "userInfoUrl": "https://graph.microsoft.com/v1.0/me/"}

    def profile(self, settings, tokens):
        info = super().profile(settings, tokens)
        if info.get("error"):
            raise client.unexpected("Error in Microsoft Graph API response")
        return info

    def identity_of(self, profile):
        email = _text(profile, "mail")
        principal = _text(profile, "userPrincipalName")
        if not email and "@" in principal:
            email = principal
        user_id = _text(profile, "id")
        return user_id, email or user_id, email, _text(profile, "givenName"), _text(profile, "surname")


class InstagramType(OAuthPreset):
    provider_id, name = "instagram", "Instagram"
    default_scope = "user_profile"
    urls = {"authorizationUrl": "https://api.instagram.com/oauth/authorize",
            "tokenUrl": "https://api.instagram.com/oauth/access_token",
            "userInfoUrl": "https://graph.instagram.com/me?fields=id,username"}

    def identity_of(self, profile):
        return _text(profile, "id"), _text(profile, "username"), "", "", ""


class PayPalType(OAuthPreset):
    provider_id, name = "paypal", "PayPal"
    default_scope = "openid profile email"
    extra_booleans = ("sandbox",)

    def built_in(self, settings):
        www, api = ("www.sandbox.paypal.com", "api.sandbox.paypal.com") if settings.flag("sandbox") else (
            "www.paypal.com", "api.paypal.com")
        return {"authorizationUrl": f"https://{www}/signin/authorize", "tokenUrl": f"https://{api}/v1/oauth2/token",
                "userInfoUrl": f"https://{api}/v1/identity/oauth2/userinfo/?schema=paypalv1.1"}

    def identity_of(self, profile):
        emails = profile.get("emails") if isinstance(profile.get("emails"), list) else []
        primary = [e for e in emails if isinstance(e, dict) and e.get("primary")]
        email = _text(primary[0], "value") if primary else _text(profile, "email")
        first, last = split_name(_text(profile, "name"))
        return _text(profile, "user_id"), email, email, first, last


class BitbucketType(OAuthPreset):
    provider_id, name = "bitbucket", "BitBucket"
    default_scope = "account"
    urls = {"authorizationUrl": "https://bitbucket.org/site/oauth2/authorize",
            "tokenUrl": "https://bitbucket.org/site/oauth2/access_token",
            "userInfoUrl": "https://api.bitbucket.org/2.0/user", "emailUrl": "https://api.bitbucket.org/2.0/user/emails"}

    def profile(self, settings, tokens):
        info = super().profile(settings, tokens)
        emails = client.userinfo(settings, tokens["access_token"], settings.get("emailUrl"))
        values = emails.get("values") if isinstance(emails, dict) and isinstance(emails.get("values"), list) else []
        primary = [e for e in values if isinstance(e, dict) and e.get("is_primary")]
        return {**info, "email": _text(primary[0], "email")} if primary else info

    def identity_of(self, profile):
        first, last = split_name(_text(profile, "display_name"))
        return (_text(profile, "account_id") or _text(profile, "uuid"), _text(profile, "username"),
                _text(profile, "email"), first, last)


class StackOverflowType(OAuthPreset):
    provider_id, name = "stackoverflow", "StackOverflow"
    default_scope = ""
    extra = ("key",)
    urls = {"authorizationUrl": "https://stackoverflow.com/oauth", "tokenUrl": "https://stackoverflow.com/oauth/access_token",
            "userInfoUrl": "https://api.stackexchange.com/2.2/me?order=desc&sort=name&site=stackoverflow"}

    def clean_config(self, data):
        cleaned = super().clean_config(data)
        if not cleaned.get("key"):
            raise ValueError("key is required (the Stack Exchange application key)")
        return cleaned

    def profile(self, settings, tokens):
        url = settings.get("userInfoUrl") + "&" + urlencode({"access_token": tokens["access_token"],
                                                             "key": settings.get("key")})
        info = client.userinfo(settings, tokens["access_token"], url)
        items = info.get("items") if isinstance(info, dict) else None
        if not isinstance(items, list) or not items or not isinstance(items[0], dict):
            raise client.unexpected("Stack Exchange answered no user")
        return items[0]

    def identity_of(self, profile):
        first, last = split_name(_text(profile, "display_name"))
        return _text(profile, "user_id"), _text(profile, "display_name"), "", first, last


PRESETS = (GoogleType, GitLabType, LinkedInType, AppleType, GitHubType, FacebookType, MicrosoftType, InstagramType, PayPalType,
           BitbucketType, StackOverflowType)
