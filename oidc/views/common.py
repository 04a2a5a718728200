"""What every protocol view starts with: the realm's cached configuration and its issuer."""
from django.http import JsonResponse

from realms.http.web import realm_url

from ..errors import NO_STORE
from ..realm_cache import get_realm


def realm_context(request, realm_name):
    """(RealmConfig, issuer); Http404 for an unknown or disabled realm."""
    return get_realm(realm_name), realm_url(request, realm_name)


def json_no_store(body, status=200):
    # A list too: the UMA grant's response_mode=permissions answers one, as Keycloak.
    response = JsonResponse(body, status=status, safe=False)
    for name, value in NO_STORE.items():
        response[name] = value
    return response
