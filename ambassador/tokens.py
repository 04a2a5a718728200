"""Access tokens from the OAuth 2.0 client-credentials grant, cached and renewed before expiry."""
from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from pathlib import Path
from urllib.parse import quote, urlencode

from . import httpclient
from .errors import AmbassadorError
from .tls import client_context

log = logging.getLogger("ambassador.tokens")


class TokenError(AmbassadorError):
    pass


class TokenSource:
    """One token per upstream.

    ``current()`` is the hot path: the cached token while it is young. Past ``renew_at`` (80 % of its
    lifetime) it still returns the valid token and starts a background renewal, so no call waits or
    fails at expiry. Whatever the number of waiting requests, a single fetch runs at a time.
    """

    def __init__(self, cfg, clock=time.monotonic, on_fetch=None):
        self.cfg = cfg
        self.clock = clock
        self.on_fetch = on_fetch
        self.token: str | None = None
        self.renew_at = 0.0
        self.expires_at = 0.0
        self.fetching: asyncio.Future | None = None
        self.ssl = client_context(cfg.ca, None, None) if cfg.token_url.startswith("https://") else None

    def current(self) -> str | None:
        tok = self.token
        if tok is None:
            return None
        now = self.clock()
        if now < self.renew_at:
            return tok
        if now < self.expires_at:
            self._start_fetch()
            return tok
        return None

    async def get(self) -> str:
        tok = self.current()
        if tok is not None:
            return tok
        return await asyncio.shield(self._start_fetch())

    async def refresh_after_rejection(self, rejected: str) -> str:
        """The upstream answered 401 to ``rejected``: drop it (once, however many calls saw it)."""
        if self.token == rejected:
            self.token = None
            self.renew_at = self.expires_at = 0.0
        return await self.get()

    def _start_fetch(self) -> asyncio.Future:
        if self.fetching is None:
            self.fetching = asyncio.ensure_future(self._fetch())
            self.fetching.add_done_callback(self._fetched)
        return self.fetching

    def _fetched(self, fut: asyncio.Future) -> None:
        self.fetching = None
        if not fut.cancelled() and fut.exception() is not None:
            log.warning("token fetch failed: %s", fut.exception())

    def _secret(self) -> str:
        if self.cfg.client_secret is not None:
            return self.cfg.client_secret
        return Path(self.cfg.client_secret_file).read_text().strip()

    async def _fetch(self) -> str:
        cfg = self.cfg
        form = {"grant_type": "client_credentials"}
        if cfg.scope:
            form["scope"] = cfg.scope
        if cfg.audience:
            form["audience"] = cfg.audience
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
        secret = self._secret()
        if cfg.auth == "basic":
            # RFC 6749 section 2.3.1: form-encode id and secret before Base64.
            pair = f"{quote(cfg.client_id, safe='')}:{quote(secret, safe='')}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        else:
            form["client_id"] = cfg.client_id
            form["client_secret"] = secret
        started = self.clock()
        try:
            status, _, body = await httpclient.request(cfg.token_url, "POST", headers, urlencode(form).encode(),
                                                       self.ssl, cfg.timeout)
            if status != 200:
                raise TokenError(f"token endpoint answered {status}: {body[:200].decode('utf-8', 'replace')}")
            try:
                doc = json.loads(body)
                token = doc["access_token"]
                lifetime = float(doc.get("expires_in", 300))
            except (ValueError, KeyError, TypeError) as e:
                raise TokenError(f"token endpoint answer is not a token response: {e}") from None
            if not isinstance(token, str) or not token:
                raise TokenError("token endpoint answer has an empty access_token")
        except (OSError, TimeoutError, httpclient.HTTPError, asyncio.IncompleteReadError) as e:
            if self.on_fetch:
                self.on_fetch("error")
            raise TokenError(f"token endpoint unreachable: {e or type(e).__name__}") from None
        except TokenError:
            if self.on_fetch:
                self.on_fetch("error")
            raise
        self.token = token
        self.renew_at = started + lifetime * cfg.renew_at
        self.expires_at = started + lifetime
        if self.on_fetch:
            self.on_fetch("ok")
        return token
