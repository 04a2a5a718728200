"""Conditions of conditional sub-flows."""
from .. import loa
from ..flows import Authenticator, execution_levels, is_configured


class UserConfiguredCondition(Authenticator):
    """Keycloak's ``conditional-user-configured``: the conditional sub-flow runs when the user
    has what its steps need (all REQUIRED steps, else any ALTERNATIVE one)."""

    provider_id = "conditional-user-configured"
    display_name = "Condition - user configured"
    is_condition = True

    def matches(self, ctx, flow):
        user = ctx.user
        if user is None:
            return False
        _, required, alternatives = execution_levels(flow)
        if required:
            return all(is_configured(ctx, e, user) for _, e in required)
        return any(is_configured(ctx, e, user) for _, e in alternatives)


class LevelOfAuthenticationCondition(Authenticator):
    """Keycloak's ``conditional-level-of-authentication`` (step-up): the sub-flow of level
    ``loa-condition-level`` runs when the requested level is at least this one and the level
    was not reached within ``loa-max-age`` seconds; its success records the level."""

    provider_id = loa.CONDITION
    display_name = "Condition - Level of Authentication"
    is_condition = True

    def matches(self, ctx, flow):
        level, max_age = loa.condition_config(ctx.config)
        if level is None:
            return False  # a condition without a level is a configuration error: never runs
        auth_session = ctx.auth_session
        current = loa.current_level(auth_session)
        current = -1 if current is None else current
        if loa.reached(auth_session, level, max_age):
            if current < level:
                loa.set_current(auth_session, level)
            return False
        return current < level and loa.requested(auth_session, loa.flow_levels(ctx.flow)) >= level

    def on_flow_success(self, ctx):
        level, _ = loa.condition_config(ctx.config)
        if level is not None:
            loa.record(ctx.auth_session, level)
