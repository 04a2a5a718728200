"""Keycloak 26's ``delete_credential`` action, which the account console asks for with
``kc_action=delete_credential:<credential id>``: after a recent sign-in, the user confirms and
the credential is removed. A password cannot be removed this way (Keycloak's password is not
"removeable"); an id that is not one of the user's credentials ends the action with an error."""
from django.db import transaction

from ...audit import events
from ...credentials.password_policy import HISTORY
from ...models import Credential
from ..flows import Outcome, RequiredAction

ERROR = "credential_not_found"


class DeleteCredential(RequiredAction):
    provider_id = "delete_credential"
    max_auth_age = 300  # Keycloak's default for sensitive actions

    def _credential(self, ctx):
        credential_id = ctx.action_parameter
        if not credential_id:
            return None
        mine = Credential.objects.filter(pk=credential_id, user=ctx.user)
        return mine.exclude(type__in=(Credential.PASSWORD, HISTORY)).first()

    def challenge(self, ctx, credential=None):
        credential = credential or self._credential(ctx)
        return ctx.render("delete-credential.html", {"label": credential.user_label or credential.type})

    def start(self, ctx):
        credential = self._credential(ctx)
        if credential is None:
            return Outcome.failure(ERROR)
        return Outcome.challenge(self.challenge(ctx, credential))

    def process(self, ctx):
        credential = self._credential(ctx)
        if credential is None:
            return Outcome.failure(ERROR)
        with transaction.atomic():
            credential.delete()
        events.emit(ctx.realm, "REMOVE_CREDENTIAL", client_id=ctx.client.client_id, user_id=ctx.user.pk,
                    ip_address=ctx.ip_address, details={"credential_type": credential.type,
                                                        "credential_id": str(credential.pk)})
        return Outcome.success()
