"""SAML's state that outlives its use, deleted by the realms' bounded purge task
(``realms.purges``): the request ids (and brokered assertion ids) remembered against replay,
past the time a message carrying them would be stale (``saml.inbound.first_use``)."""
from realms.purges import register

from .models import SeenRequest


def expired_requests(now):
    return SeenRequest.objects.filter(expires_at__lte=now)


def register_all():
    """Called from ``SamlConfig.ready``."""
    register("saml.seen_requests", expired_requests)
