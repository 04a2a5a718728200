"""A user's required actions as the realm defines them (Keycloak's RequiredActionProviderModel):
the implementations registered by provider id, the realm's stored definitions (enabled, default
for new users, priority), and which of a user's actions a sign-in asks for. Below the sign-in
engine, which runs the actions, and user creation, which gives new users the default ones."""
import logging

from ..data import realm_cache
from ..models import RequiredActionProvider
from ..registry import Registry

logger = logging.getLogger("idp.flows")
_required_actions = Registry("required actions")


def register_required_action(action):
    return _required_actions.add_instance(action, "provider_id")


def get_required_action(provider_id):
    return _required_actions.get(provider_id)


def required_actions():
    return _required_actions.by_key()


def required_action_settings(realm):
    """{alias: (provider id, enabled, default action, priority)} of the realm's required actions
    (cached with the realm's configuration)."""
    return realm_cache.stored(realm, "required-actions", _load_required_actions)


def _load_required_actions(realm):
    return {a.alias: (a.provider_id, a.enabled, a.default_action, a.priority)
            for a in RequiredActionProvider.objects.filter(realm=realm)}


def required_action_definition(realm, alias):
    """``{"alias", "enabled", "defaultAction"}`` of ``alias`` in ``realm`` (its stored
    required-action definition; one the realm does not list has the action's own default), or
    None when this server does not implement the action."""
    stored = required_action_settings(realm).get(alias)
    action = get_required_action(stored[0] if stored else alias)
    if action is None:
        return None
    if stored is None:
        return {"alias": alias, "enabled": action.enabled_by_default, "defaultAction": False}
    return {"alias": alias, "enabled": stored[1], "defaultAction": stored[2]}


def action_enabled(realm, name):
    definition = required_action_definition(realm, name)
    return definition is not None and definition["enabled"]


def default_required_actions(realm):
    """What a new user must do: the realm's enabled default actions (Keycloak adds them to users
    created by the Admin API, the console, registration and a directory's first import, not to
    those of a realm import)."""
    settings = required_action_settings(realm)
    return [alias for alias, (_, enabled, default, priority) in sorted(settings.items(), key=lambda x: x[1][3])
            if enabled and default]


def pending_required_actions(realm, names):
    """(alias, provider id) of the required actions ``names`` this realm asks for, in the realm's
    priority order. One the realm has disabled is not asked for, as in Keycloak (it stays on the
    user, so enabling it again asks for it; the log says it was passed over); one the realm does
    not list is asked for all the same (an unknown requirement is never dropped)."""
    settings = required_action_settings(realm)
    pending = []
    for name in dict.fromkeys(names):
        provider_id, enabled, _, priority = settings.get(name, (name, True, False, 10**6))
        if not enabled:
            logger.warning("realm %s: required action %s is disabled in the realm: not asked for", realm.name, name)
            continue
        pending.append((priority, name, provider_id))
    return [(name, provider_id) for _, name, provider_id in sorted(pending, key=lambda x: x[0])]
