"""Conditions of conditional sub-flows."""
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
