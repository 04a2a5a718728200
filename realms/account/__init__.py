"""The account service a realm offers its users (Keycloak's account console and Account REST
API at ``/realms/<realm>/account/``).

``realms`` knows no protocol, so two things come from the protocol app through hooks it
registers from its ``AppConfig.ready()``:

- consents through ``realms.users.consents`` (the store the protocol registers there);
- ``register_sign_in(url_for)``: ``url_for(request, realm, redirect_uri, **params)``, the URL
  that signs a browser in with the realm's ``account`` client and comes back to
  ``redirect_uri`` (extra ``params`` such as ``kc_locale`` are passed on)."""
from ..data.builtins import ACCOUNT_CLIENT
from ..data.realm_cache import find_realm

ACCOUNT_CONSOLE_CLIENT = "account-console"


_sign_in = None


def register_sign_in(url_for):
    global _sign_in
    _sign_in = url_for


def account_realm(name):
    """The enabled realm named ``name`` (its cached row) while its ``account`` client is enabled;
    else None: account management is not offered there."""
    config = find_realm(name)
    if config is None:
        return None
    account = config.client(ACCOUNT_CLIENT)
    return config.realm if account is not None and account.enabled else None


def sign_in_url(request, realm, redirect_uri, **params):
    """Where a browser without an SSO session goes first; None when no protocol is installed."""
    return _sign_in(request, realm, redirect_uri, **params) if _sign_in is not None else None
