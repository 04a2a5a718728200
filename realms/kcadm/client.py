"""The admin CLI's side of HTTP: the config file with the cached tokens, signing in and refreshing,
and one ``request`` that turns a failed answer into the server's message.

The config file has Keycloak's ``kcadm.config`` shape (``serverUrl``, ``realm``, ``truststore``,
``endpoints`` keyed by server and realm) so a team's existing ``--config`` files and habits carry
over; it is written with mode 0600 because it holds tokens and, for a service account, the secret.
"""
import json
import os
import time
from pathlib import Path

import requests

from ..errors import RealmsError

DEFAULT_CONFIG = Path.home() / ".keycloak" / "kcadm.config"
# Refresh a little before expiry so a token does not lapse between the check and the call.
EXPIRY_MARGIN_MS = 5000
TIMEOUT_S = 60


class CliError(RealmsError):
    """Ends the command with this message on stderr and exit status 1."""


def now_ms():
    return int(time.time() * 1000)


class Config:
    def __init__(self, path):
        self.path = Path(path)
        self.data = {}
        if self.path.is_file():
            try:
                self.data = json.loads(self.path.read_text(encoding="utf-8") or "{}")
            except ValueError as exc:
                raise CliError(f"Failed to load config file {self.path}: {exc}") from None

    def save(self):
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(self.data, handle, indent=2)
        os.replace(tmp, self.path)

    def session(self, server, realm):
        return self.data.setdefault("endpoints", {}).setdefault(server, {}).setdefault(realm, {})


class Connection:
    """A server, the realm signed in to, and its tokens (kept in ``tokens``, a dict of the config
    file or a throw-away one with ``--no-config``)."""

    def __init__(self, server, realm, tokens, *, truststore=None, on_change=None):
        if not server:
            raise CliError("No server specified. Use --server, or 'config credentials'.")
        if not realm:
            raise CliError("No realm specified. Use --realm, or 'config credentials'.")
        self.server = server.rstrip("/")
        self.realm = realm
        self.tokens = tokens
        self.verify = truststore or True
        self.on_change = on_change or (lambda: None)
        self.http = requests.Session()

    # -- tokens ---------------------------------------------------------------------------------
    def _token_endpoint(self):
        return f"{self.server}/realms/{self.realm}/protocol/openid-connect/token"

    def _grant(self, form):
        try:
            response = self.http.post(self._token_endpoint(), data=form, timeout=TIMEOUT_S, verify=self.verify)
        except requests.RequestException as exc:
            raise CliError(f"Failed to send request - {exc}") from None
        if response.status_code != 200:
            raise CliError(_message(response) or f"Failed to obtain a token: HTTP {response.status_code}")
        answer = response.json()
        issued = now_ms()
        self.tokens.update({
            "token": answer["access_token"],
            "refreshToken": answer.get("refresh_token"),
            "expiresAt": issued + int(answer.get("expires_in", 60)) * 1000,
            "refreshExpiresAt": (issued + int(answer["refresh_expires_in"]) * 1000
                                 if answer.get("refresh_expires_in") else None),
        })
        self.on_change()

    def login(self, *, client_id, user=None, password=None, secret=None):
        form = {"client_id": client_id}
        if secret:
            form["client_secret"] = secret
        if user:
            form.update(grant_type="password", username=user, password=password or "")
        elif secret:
            form["grant_type"] = "client_credentials"
        else:
            raise CliError("No user or client secret given: use --user, or --client with --secret.")
        self.tokens.clear()
        self.tokens["clientId"] = client_id
        if secret and not user:
            # A service account signs in again by itself when its refresh token lapses.
            self.tokens["secret"] = secret
        self._grant(form)

    def access_token(self):
        if not self.tokens.get("token"):
            raise CliError("No credentials found: run 'config credentials' first, or give --server, "
                           "--realm and --user/--password (or --client/--secret) with --no-config.")
        if now_ms() < self.tokens.get("expiresAt", 0) - EXPIRY_MARGIN_MS:
            return self.tokens["token"]
        client_id = self.tokens.get("clientId", "admin-cli")
        refresh_until = self.tokens.get("refreshExpiresAt")
        if self.tokens.get("refreshToken") and (refresh_until is None or now_ms() < refresh_until - EXPIRY_MARGIN_MS):
            form = {"grant_type": "refresh_token", "refresh_token": self.tokens["refreshToken"], "client_id": client_id}
            if self.tokens.get("secret"):
                form["client_secret"] = self.tokens["secret"]
            self._grant(form)
        elif self.tokens.get("secret"):
            self._grant({"grant_type": "client_credentials", "client_id": client_id,
                         "client_secret": self.tokens["secret"]})
        else:
            raise CliError("Session has expired. Login again with 'config credentials'")
        return self.tokens["token"]

    # -- the Admin API --------------------------------------------------------------------------
    def url(self, endpoint, target_realm):
        """Keycloak's rules: an absolute URL as given; ``realms...``, ``serverinfo`` and a leading
        ``/`` below ``/admin``; anything else below the target realm."""
        if endpoint.startswith(("http://", "https://")):
            return endpoint
        if endpoint.startswith("/"):
            return f"{self.server}/admin{endpoint}"
        if endpoint == "realms" or endpoint.startswith("realms/") or endpoint == "serverinfo":
            return f"{self.server}/admin/{endpoint}"
        return f"{self.server}/admin/realms/{target_realm or self.realm}/{endpoint}"

    def request(self, method, url, *, params=None, body=None):
        headers = {"Authorization": f"Bearer {self.access_token()}", "Accept": "application/json"}
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        try:
            response = self.http.request(method, url, params=params, data=data, headers=headers,
                                         timeout=TIMEOUT_S, verify=self.verify)
        except requests.RequestException as exc:
            raise CliError(f"Failed to send request - {exc}") from None
        if response.status_code == 404 and not _message(response):
            raise CliError(f"Resource not found for url: {url}")
        if response.status_code >= 400:
            raise CliError(_message(response) or f"HTTP error - {response.status_code} {response.reason}")
        return response


def _message(response):
    """The server's own words: Keycloak's ``errorMessage``, OAuth's ``error_description`` or
    ``error``, or a short plain-text body."""
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip()
        return text if text and len(text) < 500 and "<" not in text else ""
    if isinstance(body, dict):
        for key in ("errorMessage", "error_description", "error"):
            if body.get(key):
                return str(body[key])
    return ""
