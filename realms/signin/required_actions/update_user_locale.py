"""Keycloak's ``update_user_locale`` required action (its DefaultLocaleUpdaterProvider): never a
page, only a trigger. The locale a user picked on a sign-in page (``kc_locale``, kept in the
authentication session) becomes their ``locale`` attribute once they have signed in, so their
later pages and e-mails use it (``realms.http.messages.locale_for``, ``realms.http.email.user_locale``).
Only a locale the realm supports, with internationalization on; the realm may switch the action off."""
from ...audit import events
from ...http import messages
from ..flows import Outcome, RequiredAction


def update_users_locale(ctx, locale):
    """Store ``locale`` as the user's ``locale`` attribute (UPDATE_PROFILE event with Keycloak's
    ``pref.previous.locale`` and ``pref.updated.locale`` details) when it differs."""
    user = ctx.user
    attributes = dict(user.attributes or {})
    previous = attributes.get("locale")
    previous = previous[0] if isinstance(previous, list) and previous else previous
    if previous == locale:
        return
    attributes["locale"] = [locale]
    user.attributes = attributes
    user.save(update_fields=["attributes"])
    events.emit(ctx.realm, "UPDATE_PROFILE", client_id=ctx.client.client_id, user_id=user.pk,
                ip_address=ctx.ip_address,
                details={"pref.previous.locale": previous or "", "pref.updated.locale": locale})


class UpdateUserLocale(RequiredAction):
    provider_id = "update_user_locale"
    display_name = "Update User Locale"
    initiated_action_supported = False  # no page: an application cannot ask for it

    def evaluate_triggers(self, ctx):
        realm = ctx.realm
        requested = ctx.auth_session.notes.get(messages.USER_REQUEST_LOCALE)
        if not requested or not realm.internationalization_enabled:
            return
        locale = messages.best_match(list(realm.supported_locales or ()), requested)
        if locale:
            update_users_locale(ctx, locale)

    def start(self, ctx):
        return Outcome.success()

    def process(self, ctx):
        return Outcome.success()
