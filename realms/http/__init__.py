"""Protocol-neutral helpers for talking to browsers and other servers: the issuer and client
address (``web``), redirect URI rules, CORS, security headers, input limits, the one SSRF-safe
outbound client, messages and themes, JSON endpoints and e-mail. Imports only ``data`` and
``models``."""
