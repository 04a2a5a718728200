"""What a test asks of a user's password: whether the user's store accepts it, as a sign-in asks it
(the realm database's ``password`` credential type: the stored hash, upgraded when the realm's
policy would not make it now)."""
from realms.credentials import get_credential_type


def holds_password(user, password):
    return get_credential_type("password").verify(user, password)
