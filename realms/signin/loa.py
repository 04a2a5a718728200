"""Levels of authentication (step-up), protocol-neutral (Keycloak's AcrStore and AcrUtils).

A protocol turns the client's requested acr into a level (``requested_level``) and notes it on
the authentication session (``request``). The flow's ``conditional-level-of-authentication``
sub-flows (one per level) then run the lowest level, and the others up to the requested one
that the SSO session has not already reached within the condition's ``loa-max-age``. The
levels reached and when live in the note ``LoA_MAP`` ({level: epoch seconds}), copied from the
SSO session by the Cookie step and written back to it when the sign-in completes. The level reached by this
sign-in (``current_level``) becomes the token's ``acr``, by name where the client asked by name.
"""
import json
import time

from ..errors import RealmsError
from ..sso import sessions

LOA_MAP = "LoA_MAP"
REQUESTED = "REQUESTED_LEVEL_OF_AUTHENTICATION"
CURRENT = "LEVEL_OF_AUTHENTICATION"
ESSENTIAL = "FORCE_LEVEL_OF_AUTHENTICATION"
ACR_VALUES = "acr_values"
CONDITION = "conditional-level-of-authentication"
LEVEL_CONFIG, MAX_AGE_CONFIG = "loa-condition-level", "loa-max-age"
DEFAULT_MAX_AGE = 36000  # Keycloak's default for loa-max-age: 10 hours
MINIMUM_LOA, NO_LOA = 0, -1


class UnknownAcr(RealmsError, ValueError):
    """An acr value that is neither a number nor mapped to a level."""


def _parse_map(value):
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError:
            return {}
    if not isinstance(value, dict):
        return {}
    levels = {}
    for name, level in value.items():
        try:
            levels[str(name)] = int(level)
        except (TypeError, ValueError):
            continue
    return levels


def acr_loa_map(realm, client=None):
    """The client's ACR-to-LoA mapping (attribute ``acr.loa.map``), else the realm's."""
    return _parse_map(((client.attributes if client else None) or {}).get("acr.loa.map")) or \
        _parse_map((realm.attributes or {}).get("acr.loa.map"))


def default_acr_values(client):
    """The client's ``default.acr.values`` (Keycloak stores them joined by ``##``)."""
    value = (client.attributes or {}).get("default.acr.values") or []
    return [v for v in (value.split("##") if isinstance(value, str) else value) if v]


def level_of(acr, loa_map):
    if acr in loa_map:
        return loa_map[acr]
    try:
        return int(acr)
    except ValueError:
        raise UnknownAcr(acr) from None


def requested_level(acr_values, loa_map, *, essential):
    """The lowest level among ``acr_values`` (any of them satisfies the client, Keycloak's rule);
    an unknown value counts as the minimum level, or raises UnknownAcr when essential."""
    levels = []
    for acr in acr_values:
        try:
            levels.append(level_of(acr, loa_map))
        except UnknownAcr:
            if essential:
                raise
            levels.append(MINIMUM_LOA)
    return min(levels) if levels else None


def request(auth_session, acr_values, level, *, essential):
    if level is not None:
        auth_session.notes[REQUESTED] = level
        auth_session.notes[ACR_VALUES] = list(acr_values)
        if essential:
            auth_session.notes[ESSENTIAL] = True


def condition_config(config):
    """(level, max age) of a level-of-authentication condition's config; level None if unset."""
    try:
        level = int(config.get(LEVEL_CONFIG, ""))
    except (TypeError, ValueError):
        level = None
    try:
        max_age = int(config.get(MAX_AGE_CONFIG, DEFAULT_MAX_AGE))
    except (TypeError, ValueError):
        max_age = DEFAULT_MAX_AGE
    return level, max_age


def flow_levels(flow):
    """{level: max age} of the flow's level-of-authentication conditions."""
    levels = {}
    for execution in flow.executions if flow is not None else ():
        if execution.requirement == "DISABLED":
            continue
        if execution.flow is not None:
            levels.update(flow_levels(execution.flow))
        elif execution.authenticator == CONDITION:
            level, max_age = condition_config(execution.config)
            if level is not None:
                levels[level] = max_age
    return levels


def requested(auth_session):
    """The level the client asked for, NO_LOA when none."""
    level = auth_session.notes.get(REQUESTED)
    return NO_LOA if level is None else level


def current_level(auth_session):
    """The level this sign-in reached (from the SSO session or its steps), NO_LOA when none."""
    return auth_session.notes.get(CURRENT, NO_LOA)


def set_current(auth_session, level):
    auth_session.notes[CURRENT] = level


def reached(auth_session, level, max_age, now=None):
    """Whether ``level`` was reached within ``max_age`` seconds (0: only by this sign-in)."""
    when = auth_session.notes.get(LOA_MAP, {}).get(str(level))
    if when is None or max_age <= 0:
        return False
    return (now or time.time()) - when <= max_age


def record(auth_session, level, max_age):
    """This sign-in reached ``level``; kept for later sign-ins unless its max age is 0."""
    set_current(auth_session, level)
    if max_age > 0:
        auth_session.notes.setdefault(LOA_MAP, {})[str(level)] = int(time.time())


def highest_reached(auth_session, max_ages):
    """The highest level reached before, counting up from the lowest and stopping at the first
    one past its max age (``max_ages``: the flow's {level: max age}; a level the flow has no
    condition for has none); NO_LOA when the SSO session never reached a level (Keycloak's
    AcrStore.getHighestAuthenticatedLevelFromPreviousAuthentication)."""
    levels = auth_session.notes.get(LOA_MAP)
    if not levels:
        return NO_LOA
    highest, now = MINIMUM_LOA, time.time()
    for level in sorted(int(key) for key in levels):
        if not reached(auth_session, level, max_ages.get(level, 0), now):
            break
        highest = level
    return highest


def store(auth_session, user_session):
    """Write the levels reached to the SSO session (nothing for a flow without levels)."""
    levels = auth_session.notes.get(LOA_MAP)
    if levels and (user_session.notes or {}).get(LOA_MAP) != levels:
        sessions.set_note(user_session, LOA_MAP, dict(levels))


def acr_for(level, loa_map, acr_values):
    """The acr for ``level`` (Keycloak's AcrUtils.mapLoaToAcr): with a mapping, the requested
    value of the highest level that ``level`` reaches; else the number."""
    best, best_level = None, -1
    for acr in acr_values if loa_map else ():
        try:
            mapped = level_of(acr, loa_map)
        except UnknownAcr:
            continue
        if best_level < mapped <= level:
            best, best_level = acr, mapped
    return best or str(level)


def enforce_minimum(acr_values, client, loa_map):
    """The values without those below the client's ``minimum.acr.value`` (or that name no
    level); the minimum itself when none is left (Keycloak's AcrUtils.enforceMinimumAcr)."""
    minimum = (client.attributes or {}).get("minimum.acr.value")
    if not minimum:
        return acr_values
    try:
        minimum_level = level_of(minimum, loa_map)
    except UnknownAcr:
        return acr_values  # a minimum that names no level cannot be enforced
    kept = []
    for acr in acr_values:
        try:
            if level_of(acr, loa_map) >= minimum_level:
                kept.append(acr)
        except UnknownAcr:
            continue
    return kept or [minimum]
