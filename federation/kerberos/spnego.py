"""Keycloak's ``auth-spnego`` browser step: sign-in with the Kerberos ticket of a
domain-joined desktop (SPNEGO, RFC 4559).

Without an ``Authorization: Negotiate`` header the step answers 401 with
``WWW-Authenticate: Negotiate``: a browser holding a ticket for this server repeats the request
with the token; one without shows the page, which posts itself back, and the step then stands
aside for the next alternative (the login form), as Keycloak's does. A token goes to the realm's
user storage providers that take Kerberos credentials (``realms.users.storage.authenticate_by_credential``:
the ``kerberos`` provider, LDAP's Kerberos integration); the principal's user is signed in.
"""
from realms.http import messages
from realms.signin.flows import Authenticator, Outcome
from realms.users import storage

NEGOTIATE = "Negotiate"


class SpnegoAuthenticator(Authenticator):
    provider_id = "auth-spnego"
    display_name = "Kerberos"

    def _challenge(self, ctx, token=""):
        response = ctx.render("bypass-kerberos.html", status=401)
        response["WWW-Authenticate"] = f"{NEGOTIATE} {token}" if token else NEGOTIATE
        return response

    def authenticate(self, ctx):
        header = ctx.request.headers.get("Authorization")
        if header is None:
            return Outcome.challenge(self._challenge(ctx))
        parts = header.split()
        if not parts or parts[0].lower() != NEGOTIATE.lower():
            return Outcome.attempted()  # another scheme: not ours to judge
        try:
            output = storage.authenticate_by_credential(ctx.realm, storage.KERBEROS, parts[1]) \
                if len(parts) == 2 else storage.CredentialOutput.failed()
        except storage.Unavailable:
            # The ticket is good but the directory that maps it to a user cannot be reached.
            return self._failure(ctx, "user_storage_unavailable", None, "userStorageUnavailableMessage")
        if output is None:  # no provider of the realm takes Kerberos tickets
            return Outcome.attempted()
        if output.status == output.CONTINUE:
            return Outcome.challenge(self._challenge(ctx, output.response_token))
        if output.status == output.AUTHENTICATED and output.user.enabled:
            ctx.set_user(output.user)
            ctx.add_auth_method(storage.KERBEROS)
            return Outcome.success()
        error = "invalid_user_credentials" if output.status == output.FAILED else "user_disabled"
        return self._failure(ctx, error, output.user, "invalidUserMessage")

    def _failure(self, ctx, error, user, message_key):
        ctx.login_error(error, user=user)
        locale = messages.locale_for(ctx.request, ctx.realm)
        page = ctx.render("error.html", {"message": messages.text(ctx.realm, locale, message_key)}, status=401)
        return Outcome.failure(error, page)

    def action(self, ctx):
        # The challenge page posted itself back: the browser had no ticket for us.
        return Outcome.attempted()
