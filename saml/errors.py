"""Typed errors of the SAML endpoints, turned into responses in one place (``saml.views``).

``UntrustedRequest``: found before the requester and its response address are known good (bad
XML, unknown issuer, unregistered ACS URL, bad signature, stale or replayed request): shown on an
error page, never sent anywhere. ``StatusError``: the requester is trusted; the answer is a SAML
Response with this status, sent to the checked address. Both, and every other error of the
app, derive from ``SamlError``.
"""


class SamlError(Exception):
    """An error of the SAML app."""


class UntrustedRequest(SamlError):
    def __init__(self, message, event_error="invalid_request", client_id=""):
        super().__init__(message)
        self.message = message
        self.event_error = event_error
        self.client_id = client_id
        self.kind = ""  # the refused message's element name, once known (AuthnRequest ...)


class StatusError(SamlError):
    def __init__(self, status, message="", event_error="invalid_request", sub_status=""):
        super().__init__(message or status)
        self.status = status
        self.sub_status = sub_status
        self.message = message
        self.event_error = event_error
