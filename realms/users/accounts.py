"""Creating accounts: users and clients' service-account users. Below both the realm services
and realm import, which create users the same way."""
from django.db import transaction

from ..credentials.password_policy import PasswordPolicyError
from ..data import rows
from ..models import User
from . import actions, storage


@transaction.atomic(savepoint=False)  # a failure here fails the caller's transaction, as every caller wants
def create_user(realm, username, password=None, **fields) -> User:
    """The one way a user is created by every writer (the console, the Admin API, SCIM,
    registration, the bootstrap admin, a Kerberos sign-in): a new user holding the realm's
    default role (as every new Keycloak user does) and, unless a service account, the realm's
    default required actions. Its row is saved through the user storage hooks (a directory with
    sync registrations creates its entry then); ``password`` is set in the user's store
    (``storage.set_password``). Raises ``password_policy.PasswordPolicyError`` or
    ``storage.Unavailable`` when the store refuses the password, having removed the entry a
    directory made (no transaction undoes that)."""
    user = User(realm=realm, username=username.lower(), **fields)
    if user.service_account_client_id is None:
        user.required_actions = list(dict.fromkeys([*(user.required_actions or ()),
                                                    *actions.default_required_actions(realm)]))
    user.save()
    if realm.default_role_id:
        # The row itself, not ``roles.add``: its m2m signal would flush the realm's cached
        # configuration in every process, yet no cache can hold roles of a user made just now.
        rows.insert(User.roles.through(user=user, role_id=realm.default_role_id))
    if password is not None:
        try:
            storage.set_password(realm, user, password)
        except (PasswordPolicyError, storage.Unavailable):
            if user.federation_link_id is not None:
                storage.delete_user(realm, user)
            raise
    return user


def enable_service_account(client):
    """The client's service-account user (``service-account-<clientId>``), created if missing."""
    existing = User.objects.filter(service_account_client=client).first()
    if existing is not None:
        return existing
    return create_user(
        client.realm, f"service-account-{client.client_id}", service_account_client=client, enabled=True
    )
