"""Conditions of conditional sub-flows."""
import logging
import re

from ...models import Role, effective_roles, group_with_ancestors
from .. import loa
from ..engine import execution_levels, is_configured
from ..flows import Authenticator, get_authenticator

logger = logging.getLogger("idp.flows")


class UserConfiguredCondition(Authenticator):
    """Keycloak's ``conditional-user-configured``: the conditional sub-flow runs when the user
    has what its steps need (all REQUIRED steps, else any ALTERNATIVE one)."""

    provider_id = "conditional-user-configured"
    display_name = "Condition - user configured"
    is_condition = True

    def matches(self, ctx, flow):
        user = ctx.user
        _, required, alternatives = execution_levels(flow)
        if user is None:
            # Before anyone is identified only the steps that can answer then are asked (Keycloak
            # asks them all; the others would need the user they are asked about).
            def configured(e):
                auth = get_authenticator(e.authenticator) if e.flow is None else None
                return auth is not None and auth.configured_without_user and auth.configured_for(ctx, None)
        else:
            def configured(e):
                return is_configured(ctx, e, user)
        if required:
            return all(configured(e) for _, e in required)
        return any(configured(e) for _, e in alternatives)


class LevelOfAuthenticationCondition(Authenticator):
    """Keycloak's ``conditional-level-of-authentication`` (step-up): the sub-flow of level
    ``loa-condition-level`` runs while this sign-in has reached no level yet, or when the client
    asked for at least this level and the SSO session did not reach it within ``loa-max-age``
    seconds (that level then counts as reached); its success records the level."""

    provider_id = loa.CONDITION
    display_name = "Condition - Level of Authentication"
    is_condition = True
    help_text = "Flow is executed only if the configured LOA or a higher one has been requested but not yet satisfied."
    config_properties = (
        {"name": "loa-condition-level", "label": "Level of Authentication (LoA)", "type": "Integer",
         "helpText": "Integer value of the level of authentication of this sub-flow."},
        {"name": "loa-max-age", "label": "Max Age", "type": "Integer", "defaultValue": "36000",
         "helpText": "Seconds for which the level stays valid without re-authentication; 0: always re-authenticate."},
    )

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


def _true(config, key):
    return str(config.get(key, "")).lower() == "true"


class UserRoleCondition(Authenticator):
    """Keycloak's ``conditional-user-role``: the user holds the role ``condUserRole`` (a realm
    role, or ``clientId.role``; composites and groups count), inverted by ``negate``. A role
    that does not exist never matches (logged)."""

    provider_id = "conditional-user-role"
    display_name = "Condition - user role"
    is_condition = True
    requires_user = True
    help_text = "Flow is executed only if user has the given role."
    config_properties = (
        {"name": "condUserRole", "label": "User role", "type": "Role",
         "helpText": "Role the user should have to execute this flow; a client role as clientId.role."},
        {"name": "negate", "label": "Negate output", "type": "boolean", "defaultValue": "false",
         "helpText": "Apply a NOT to the check result."},
    )

    def matches(self, ctx, flow):
        wanted = ctx.config.get("condUserRole", "")
        role = _role_from_string(ctx.realm, wanted)
        if role is None:
            logger.error("realm %s: conditional-user-role names no role %r", ctx.realm.name, wanted)
            return False
        return _true(ctx.config, "negate") != (role in effective_roles(ctx.user))


def _role_from_string(realm, text):
    """A realm role by name, else ``clientId.role`` split at any dot (client ids may hold dots)."""
    role = Role.objects.filter(realm=realm, client__isnull=True, name=text).first()
    for i, char in enumerate(text):
        if role is not None:
            break
        if char == ".":
            role = Role.objects.filter(realm=realm, client__client_id=text[:i], name=text[i + 1:]).first()
    return role


class UserAttributeCondition(Authenticator):
    """Keycloak's ``conditional-user-attribute``: one of the user's values of ``attribute_name``
    equals ``attribute_expected_value`` (a full-match regular expression when ``regex``; the
    user's groups' and their parents' values too when ``include_group_attributes``), inverted
    by ``not``."""

    provider_id = "conditional-user-attribute"
    display_name = "Condition - user attribute"
    is_condition = True
    requires_user = True
    help_text = "Flow is executed only if the user attribute exists and has the expected value"
    config_properties = (
        {"name": "attribute_name", "label": "Attribute name", "type": "String",
         "helpText": "Name of the attribute to check"},
        {"name": "attribute_expected_value", "label": "Expected attribute value", "type": "String",
         "helpText": "Expected value in the attribute"},
        {"name": "include_group_attributes", "label": "Include group attributes", "type": "boolean",
         "defaultValue": "false", "helpText": "Also look at the attributes of the user's groups and their parents."},
        {"name": "regex", "label": "Regex", "type": "boolean", "defaultValue": "false",
         "helpText": "Check equality with the expected value as a regular expression."},
        {"name": "not", "label": "Negate output", "type": "boolean", "defaultValue": "false",
         "helpText": "Return true when the attribute is not set or has another value."},
    )

    def matches(self, ctx, flow):
        config = ctx.config
        name, expected = config.get("attribute_name", ""), config.get("attribute_expected_value", "")
        if _true(config, "regex"):
            try:
                pattern = re.compile(expected)
            except re.error:
                logger.error("realm %s: conditional-user-attribute has an invalid regex", ctx.realm.name)
                return False

            def hit(value):
                return pattern.fullmatch(value) is not None
        else:
            def hit(value):
                return value == expected
        found = any(hit(v) for v in _values(ctx.user.attributes, name))
        if not found and _true(config, "include_group_attributes"):
            groups = group_with_ancestors(list(ctx.user.groups.all()))
            found = any(hit(v) for g in groups for v in _values(g.attributes, name))
        return _true(config, "not") != found


def _values(attributes, name):
    values = (attributes or {}).get(name, [])
    return [values] if isinstance(values, str) else [str(v) for v in values]


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
