"""Sender-constrained tokens: what a request proves about its sender and the tokens bound to it.

A token request may prove possession of a key (DPoP, RFC 9449: ``oidc.dpop``) or of a client
certificate (mutual TLS, RFC 8705: ``oidc.mtls``). What it proves becomes the ``cnf`` claim
(RFC 7800) of the access token issued, and of the refresh token where the RFCs ask for it; a bound
token is honoured only when its next request proves the same thing again. Each mechanism answers
the same two questions, so the grants, userinfo and introspection ask here and never know which.
"""
from dataclasses import dataclass, field

from . import dpop, mtls


@dataclass
class Binding:
    """What a token request binds: ``cnf`` goes into the access token, ``refresh_cnf`` into the
    refresh token; ``token_type`` is the response's (``DPoP`` for a DPoP-bound token)."""

    cnf: dict = field(default_factory=dict)
    refresh_cnf: dict = field(default_factory=dict)
    token_type: str = "Bearer"


def token_request(request, exchange) -> Binding:
    """The binding of the tokens this (client-authenticated) token request will get; raises the
    mechanism's OAuthError when a proof is bad or a client that requires one sent none."""
    found = Binding()
    for mechanism in (dpop, mtls):
        mechanism.token_request(request, exchange, found)
    return found


def check_refresh(refresh_claims, binding: Binding):
    """A bound refresh token is refreshed only by the same key or certificate (RFC 9449 §5,
    RFC 8705 §3)."""
    for mechanism in (dpop, mtls):
        mechanism.check_refresh(refresh_claims, binding)


def check_resource_request(request, token, claims, url):
    """At userinfo (and any endpoint a bound access token is presented to): the request proves
    what the token's ``cnf`` names, else the mechanism's error. ``url`` is the endpoint's URL as
    the client called it (DPoP's ``htu``)."""
    for mechanism in (dpop, mtls):
        mechanism.check_resource_request(request, token, claims, url)
