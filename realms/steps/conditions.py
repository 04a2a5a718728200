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
    ``loa-condition-level`` runs while this sign-in has reached no level yet, or when the client
    asked for at least this level and the SSO session did not reach it within ``loa-max-age``
    seconds (that level then counts as reached); its success records the level."""

    provider_id = loa.CONDITION
    display_name = "Condition - Level of Authentication"
    is_condition = True

    def matches(self, ctx, flow):
        level, max_age = loa.condition_config(ctx.config)
        level = loa.MINIMUM_LOA if level is None else level
        auth_session = ctx.auth_session
        current = loa.current_level(auth_session)
        if current < loa.MINIMUM_LOA:
            return True
        if loa.requested(auth_session) < level:
            return False
        if loa.reached(auth_session, level, max_age):
            if current < level:
                loa.set_current(auth_session, level)
            return False
        return True

    def on_flow_success(self, ctx):
        level, max_age = loa.condition_config(ctx.config)
        if level is not None:
            loa.record(ctx.auth_session, level, max_age)


class CredentialCondition(Authenticator):
    """Keycloak's ``conditional-credential``: holds when none (``included`` false, the default)
    or any (``included`` true) of the configured credential types proved the user in this
    sign-in. The built-in 2FA sub-flow uses it to skip the second factor after a passkey
    (``credentials: webauthn-passwordless``)."""

    provider_id = "conditional-credential"
    display_name = "Condition - credential"
    is_condition = True
    # Auth methods recorded under a name other than their credential type.
    _CREDENTIAL_OF_METHOD = {"pwd": "password"}

    def matches(self, ctx, flow):
        configured = {c.strip() for c in str(ctx.config.get("credentials", "")).replace("##", ",").split(",")
                      if c.strip()}
        used = {self._CREDENTIAL_OF_METHOD.get(m, m) for m in ctx.auth_session.auth_methods} or {"none"}
        included = str(ctx.config.get("included", "")).lower() == "true"
        return bool(configured & used) if included else not configured & used
