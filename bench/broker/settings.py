"""The benchmark's production settings, with the upstream provider on loopback over plain HTTP
allowed (both servers run on this machine)."""
from bench.oidc.settings import *  # noqa: F401,F403

IDP_OUTBOUND_ALLOW_HTTP = True
IDP_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
