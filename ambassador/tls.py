"""Client TLS towards an upstream: verify its certificate, present ours, reload on file change."""
from __future__ import annotations

import logging
import os
import ssl
import time

log = logging.getLogger("ambassador.tls")


def client_context(ca: str | None, cert: str | None, key: str | None, verify: bool = True,
                   alpn: list[str] | None = None) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if verify:
        ctx.check_hostname = True
        ctx.verify_mode = ssl.CERT_REQUIRED
        if ca:
            ctx.load_verify_locations(cafile=ca)
        else:
            ctx.load_default_certs()
    else:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cert:
        ctx.load_cert_chain(cert, key)
    if alpn:
        ctx.set_alpn_protocols(alpn)
    return ctx


class ReloadingContext:
    """Holds the current SSLContext; at most every ``reload_check`` seconds, when a new connection is
    about to be made, compares the files' (mtime, size, inode) and rebuilds the context if any
    changed. A broken new file keeps the previous context (logged) so a half-written rotation does
    not cut traffic. ``generation`` tells pooled connections they were made with old material.
    """

    def __init__(self, cfg, alpn: list[str] | None = None, clock=time.monotonic, on_reload=None):
        self.cfg = cfg
        self.alpn = alpn
        self.clock = clock
        self.on_reload = on_reload
        self.files = [f for f in (cfg.ca, cfg.cert, cfg.key) if f]
        self.stamp = self._stamp()
        self.ctx = client_context(cfg.ca, cfg.cert, cfg.key, cfg.verify, alpn)
        self.checked = clock()
        self.generation = 0

    def _stamp(self):
        out = []
        for f in self.files:
            try:
                st = os.stat(f)
                out.append((st.st_mtime_ns, st.st_size, st.st_ino))
            except OSError:
                out.append(None)
        return out

    @property
    def server_name(self) -> str | None:
        return self.cfg.server_name

    def context(self) -> ssl.SSLContext:
        now = self.clock()
        if now - self.checked >= self.cfg.reload_check:
            self.checked = now
            stamp = self._stamp()
            if stamp != self.stamp:
                try:
                    ctx = client_context(self.cfg.ca, self.cfg.cert, self.cfg.key, self.cfg.verify, self.alpn)
                except (OSError, ssl.SSLError, ValueError) as e:
                    log.error("TLS files changed but cannot be loaded, keeping the previous ones: %s", e)
                else:
                    self.ctx = ctx
                    self.stamp = stamp
                    self.generation += 1
                    log.info("TLS material reloaded (%s)", ", ".join(self.files))
                    if self.on_reload is not None:
                        self.on_reload()
        return self.ctx
