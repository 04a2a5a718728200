"""Keycloak 26's ``delete_account`` action (disabled in a new realm): the account console asks
for it with ``kc_action=delete_account``, or an admin sets it on a user. Only a user holding the
``account`` client's ``delete-account`` role may go on; after a fresh sign-in (a maximum age of
0, as Keycloak) the user confirms, is removed through their store, and the sign-in ends on a
page saying so (there is no one left to sign in)."""
from django.db import transaction

from ...audit import events
from ...data.builtins import ACCOUNT_CLIENT
from ...errors import StoreRefused
from ...models import client_role_names, effective_roles
from ...users import storage
from ..flows import Outcome, RequiredAction

ROLE = "delete-account"  # Keycloak's AccountRoles.DELETE_ACCOUNT
ERROR = "user_delete_error"  # Keycloak's Errors.USER_DELETE_ERROR


def may_delete(user):
    return ROLE in client_role_names(effective_roles(user)).get(ACCOUNT_CLIENT, [])


class DeleteAccount(RequiredAction):
    provider_id = "delete_account"
    enabled_by_default = False
    max_auth_age = 0  # a sign-in made for this deletion

    def challenge(self, ctx, error=None):
        if error is None and not may_delete(ctx.user):
            return ctx.render("info.html", {"message_key": "deletingAccountForbidden", "is_error": True}, status=403)
        return ctx.render("delete-account-confirm.html", {"error": error}, status=400 if error else 200)

    def _error(self, ctx, reason, message):
        events.emit(ctx.realm, "DELETE_ACCOUNT_ERROR", client_id=ctx.client.client_id, user_id=ctx.user.pk,
                    ip_address=ctx.ip_address, error=ERROR, details={"reason": reason})
        return Outcome.challenge(self.challenge(ctx, message))

    def process(self, ctx):
        user, user_id = ctx.user, ctx.user.pk  # the row's pk is gone once deleted
        if not may_delete(user):
            return self._error(ctx, "does not have the required roles for user deletion", "deletingAccountForbidden")
        try:
            with transaction.atomic():
                storage.delete_user(ctx.realm, user)
        except (StoreRefused, storage.Unavailable) as exc:  # the user's directory kept them
            return self._error(ctx, str(exc), "errorDeletingAccount")
        events.emit(ctx.realm, "DELETE_ACCOUNT", client_id=ctx.client.client_id, user_id=user_id,
                    ip_address=ctx.ip_address)
        return Outcome.end(ctx.render("info.html", {"message_key": "userDeletedSuccessfully"}))
