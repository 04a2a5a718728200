"""The OpenID Connect state that outlives its use, deleted by the realms' bounded purge task
(``realms.purges``): authorization codes, pushed authorization requests, device and CIBA
requests, and revoked access tokens, past their expiry. A used code is kept until it expires, so
that its replay is still recognised and ends the client session it started (``oidc.codes``)."""
from realms.purges import register

from .models import (
    AuthorizationCode,
    BackchannelAuthentication,
    DeviceAuthorization,
    PushedAuthorization,
    RevokedToken,
)


def _expired(model):
    return lambda now: model.objects.filter(expires_at__lte=now)


def register_all():
    """Called from ``OidcConfig.ready``."""
    register("oidc.codes", _expired(AuthorizationCode))
    register("oidc.pushed_requests", _expired(PushedAuthorization))
    register("oidc.device_requests", _expired(DeviceAuthorization))
    register("oidc.backchannel_requests", _expired(BackchannelAuthentication))
    register("oidc.revoked_tokens", _expired(RevokedToken))
