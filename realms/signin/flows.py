"""Sign-in flows (spec 1 §2, "Authentication flow"), protocol-neutral: what a flow is, Keycloak
26's built-in flows and required actions, the realm's stored flows, and the interfaces of a step
(``Authenticator``) and a required action with the outcomes they answer. ``realms.signin.engine`` runs
them.

A flow is an ordered list of executions; each is a step (an *authenticator*, named by its
Keycloak provider id) or a sub-flow, with a requirement:

* REQUIRED: must succeed. CONDITIONAL (sub-flows): runs only when its *condition* steps hold,
  otherwise it is skipped. When a flow level has REQUIRED or CONDITIONAL executions, its
  ALTERNATIVE ones are ignored (Keycloak's rule).
* ALTERNATIVE: the first that succeeds completes its level; one that does not apply (e.g. the
  Cookie step without an SSO session) is passed over.
* DISABLED: never runs.

Steps come from a registry keyed by provider id (``realms.signin.steps`` registers the built-in ones
from RealmsConfig.ready; other apps register theirs the same way). An execution whose provider
is not registered is treated as unavailable: passed over as an alternative, failing the flow as
a requirement. Required actions (``UPDATE_PASSWORD`` ...) run after the flow from a registry of
their own (``realms.signin.required_actions``); one the user has but this server does not implement
refuses the sign-in (it is never skipped: that would drop the requirement silently); one the realm
disabled is passed over, as in Keycloak. An application may ask for one action (``kc_action``,
Keycloak's application-initiated actions); it runs last and its outcome goes back to the client.

A flow runs for a *binding* (its purpose): browser, direct grant, registration, reset
credentials, first broker login. The realm names the flow of each binding; a client's
``authenticationFlowBindingOverrides`` replaces the browser and direct-grant ones (Keycloak's
AuthenticationFlowResolver). Flows are the realm's stored ones (``realms.models``
AuthenticationFlow ..., read once per process through the realm cache); Keycloak 26's built-in
flows and required actions defined here are the seed of every realm (docs/decisions/0006, 0014,
0025). The realm's required-action settings decide which of a user's actions are asked for.

The binding runs from the authentication session (``binding``): the login page's "Forgot
Password?" and "Register" links switch the same sign-in to the reset-credentials or registration
flow (docs/decisions/0027).

State lives in the authentication session (``realms.sso.auth_sessions``): which executions are done
and which one shows a form, so a POST goes to the step that asked for it. The password grant
runs the direct-grant binding on a throw-away session, where a page to show is an error.
"""
import logging
from dataclasses import dataclass, field

from ..data import realm_cache
from ..registry import Registry

logger = logging.getLogger("idp.flows")

REQUIRED, ALTERNATIVE, CONDITIONAL, DISABLED = "REQUIRED", "ALTERNATIVE", "CONDITIONAL", "DISABLED"

# Bindings: the purposes a flow runs for, each with the realm field naming its flow.
BROWSER, DIRECT_GRANT, REGISTRATION = "browser", "direct_grant", "registration"
RESET_CREDENTIALS, FIRST_BROKER_LOGIN = "reset_credentials", "first_broker_login"
BINDINGS = {
    BROWSER: "browser_flow", DIRECT_GRANT: "direct_grant_flow", REGISTRATION: "registration_flow",
    RESET_CREDENTIALS: "reset_credentials_flow", FIRST_BROKER_LOGIN: "first_broker_login_flow",
}
# The bindings a client may override, under Keycloak's keys.
CLIENT_OVERRIDABLE = (BROWSER, DIRECT_GRANT)

# What the direct grant answers for any failure to identify the user (Keycloak's wording).
INVALID_CREDENTIALS = "Invalid user credentials"

# Authentication-session note (Keycloak's AuthenticationManager.SSO_AUTH): the user was answered
# from the SSO session, not by a fresh authentication; protocols copy it to the client session
# (OIDC's acr is then "0" instead of "1").
SSO_AUTH = "SSO_AUTH"


# Flow definitions --------------------------------------------------------------------------

@dataclass(frozen=True)
class Execution:
    requirement: str
    authenticator: str = ""  # provider id of a step (or of a form flow's form); empty for a sub-flow
    flow: "Flow | None" = None
    config: dict = field(default_factory=dict, hash=False, compare=False)
    priority: int = field(default=0, compare=False)
    config_alias: str = field(default="", compare=False)  # the stored authenticator config's alias


@dataclass(frozen=True)
class Flow:
    alias: str
    executions: tuple
    description: str = field(default="", compare=False)
    provider_id: str = field(default="basic-flow", compare=False)
    id: str = field(default="", compare=False)


def step(provider_id, requirement, priority=0, config_alias="", **config):
    return Execution(requirement=requirement, authenticator=provider_id, config=config, priority=priority,
                     config_alias=config_alias)


def sub_flow(alias, requirement, *executions, priority=0, description=""):
    return Execution(requirement=requirement, flow=Flow(alias, tuple(executions), description), priority=priority)


# Keycloak 26's built-in flows (DefaultAuthenticationFlows: aliases, descriptions, provider ids,
# requirements and priorities as Keycloak's). They are the seed of every realm's stored flows
# (realms/representation/authentication.py); the engine runs the stored ones.
_2FA = "Flow to determine if any 2FA is required for the authentication"
_OTP = "Flow to determine if the OTP is required for the authentication"
# Keycloak adds the organization sub-flows to every realm but the master realm.
ORGANIZATION_FLOWS = ("Organization", "First Broker Login - Conditional Organization")

BROWSER_FLOW = Flow("browser", (
    step("auth-cookie", ALTERNATIVE, 10),
    step("auth-spnego", DISABLED, 20),
    step("identity-provider-redirector", ALTERNATIVE, 25),
    sub_flow("Organization", ALTERNATIVE,
        sub_flow("Browser - Conditional Organization", CONDITIONAL,
            step("conditional-user-configured", REQUIRED, 10),
            step("organization", ALTERNATIVE, 20),
            priority=10, description="Flow to determine if the organization identity-first login is to be used"),
        priority=26),
    sub_flow("forms", ALTERNATIVE,
        step("auth-username-password-form", REQUIRED, 10),
        sub_flow("Browser - Conditional 2FA", CONDITIONAL,
            step("conditional-user-configured", REQUIRED, 10),
            step("conditional-credential", REQUIRED, 20, config_alias="browser-conditional-credential",
                 credentials="webauthn-passwordless", included="false"),
            step("auth-otp-form", ALTERNATIVE, 30),
            step("webauthn-authenticator", DISABLED, 40),
            step("auth-recovery-authn-code-form", DISABLED, 50),
            priority=20, description=_2FA),
        priority=30, description="Username, password, otp and other auth forms."),
), "Browser based authentication")

DIRECT_GRANT_FLOW = Flow("direct grant", (
    step("direct-grant-validate-username", REQUIRED, 10),
    step("direct-grant-validate-password", REQUIRED, 20),
    sub_flow("Direct Grant - Conditional OTP", CONDITIONAL,
        step("conditional-user-configured", REQUIRED, 10),
        step("direct-grant-validate-otp", REQUIRED, 20),
        priority=30, description=_OTP),
), "OpenID Connect Resource Owner Grant")

REGISTRATION_FLOW = Flow("registration", (
    Execution(REQUIRED, "registration-page-form", Flow("registration form", (
        step("registration-user-creation", REQUIRED, 20),
        step("registration-password-action", REQUIRED, 50),
        step("registration-recaptcha-action", DISABLED, 60),
        step("registration-terms-and-conditions", DISABLED, 70),
    ), "Registration form", "form-flow"), priority=10),
), "Registration flow")

RESET_CREDENTIALS_FLOW = Flow("reset credentials", (
    step("reset-credentials-choose-user", REQUIRED, 10),
    step("reset-credential-email", REQUIRED, 20),
    step("reset-password", REQUIRED, 30),
    sub_flow("Reset - Conditional OTP", CONDITIONAL,
        step("conditional-user-configured", REQUIRED, 10),
        step("reset-otp", REQUIRED, 20),
        priority=40, description="Flow to determine if the OTP should be reset or not. Set to REQUIRED to force."),
), "Reset credentials for a user if they forgot their password or something")

CLIENTS_FLOW = Flow("clients", (
    step("client-secret", ALTERNATIVE, 10),
    step("client-jwt", ALTERNATIVE, 20),
    step("client-secret-jwt", ALTERNATIVE, 30),
    step("client-x509", ALTERNATIVE, 40),
), "Base authentication for clients", "client-flow")

FIRST_BROKER_LOGIN_FLOW = Flow("first broker login", (
    step("idp-review-profile", REQUIRED, 10, "review profile config", **{"update.profile.on.first.login": "missing"}),
    sub_flow("User creation or linking", REQUIRED,
        step("idp-create-user-if-unique", ALTERNATIVE, 10, "create unique user config",
             **{"require.password.update.after.registration": "false"}),
        sub_flow("Handle Existing Account", ALTERNATIVE,
            step("idp-confirm-link", REQUIRED, 10),
            sub_flow("Account verification options", REQUIRED,
                step("idp-email-verification", ALTERNATIVE, 10),
                sub_flow("Verify Existing Account by Re-authentication", ALTERNATIVE,
                    step("idp-username-password-form", REQUIRED, 10),
                    sub_flow("First broker login - Conditional 2FA", CONDITIONAL,
                        step("conditional-user-configured", REQUIRED, 10),
                        step("auth-otp-form", ALTERNATIVE, 30),
                        step("webauthn-authenticator", DISABLED, 40),
                        step("auth-recovery-authn-code-form", DISABLED, 50),
                        priority=20, description=_2FA),
                    priority=20, description="Reauthentication of existing account"),
                priority=20, description="Method with which to verity the existing account"),
            priority=20, description="Handle what to do if there is existing account with same email/username like "
                                     "authenticated identity provider"),
        priority=20, description="Flow for the existing/non-existing user alternatives"),
    sub_flow("First Broker Login - Conditional Organization", CONDITIONAL,
        step("conditional-user-configured", REQUIRED, 10),
        step("idp-add-organization-member", REQUIRED, 20),
        priority=60, description="Flow to determine if the authenticator that adds organization members is to be used"),
), "Actions taken after first broker login with identity provider account, which is not yet linked to any "
   "Keycloak account")

SAML_ECP_FLOW = Flow("saml ecp", (step("http-basic-authenticator", REQUIRED, 10),),
                     "SAML ECP Profile Authentication Flow")

DOCKER_AUTH_FLOW = Flow("docker auth", (step("docker-http-basic-authenticator", REQUIRED, 10),),
                        "Used by Docker clients to authenticate against the IDP")

BUILTIN_FLOWS = (BROWSER_FLOW, DIRECT_GRANT_FLOW, REGISTRATION_FLOW, RESET_CREDENTIALS_FLOW, CLIENTS_FLOW,
                 FIRST_BROKER_LOGIN_FLOW, SAML_ECP_FLOW, DOCKER_AUTH_FLOW)

# Keycloak 26's required actions of a new realm: (alias = provider id, name, enabled), priorities
# 10, 20 ... in this order (update_user_locale last, at 1000), none a default action.
BUILTIN_REQUIRED_ACTIONS = (
    ("CONFIGURE_TOTP", "Configure OTP", True),
    ("TERMS_AND_CONDITIONS", "Terms and Conditions", False),
    ("UPDATE_PASSWORD", "Update Password", True),
    ("UPDATE_PROFILE", "Update Profile", True),
    ("VERIFY_EMAIL", "Verify Email", True),
    ("delete_account", "Delete Account", False),
    ("webauthn-register", "Webauthn Register", True),
    ("webauthn-register-passwordless", "Webauthn Register Passwordless", True),
    ("VERIFY_PROFILE", "Verify Profile", True),
    ("delete_credential", "Delete Credential", True),
    ("CONFIGURE_RECOVERY_AUTHN_CODES", "Recovery Authentication Codes", True),
    ("idp_link", "Linking Identity Provider", True),
    ("update_user_locale", "Update User Locale", True),
)
_flow_loaders = []


def register_flow_loader(loader):
    """``loader(realm, ref) -> Flow | None`` where ``ref`` is a flow's alias (the realm's
    bindings) or id (a client's override, as Keycloak stores it); consulted before the realm's
    stored flows (flows an app or a test defines in code)."""
    if loader not in _flow_loaders:
        _flow_loaders.append(loader)


def get_flow(realm, ref):
    for loader in _flow_loaders:
        flow = loader(realm, ref)
        if flow is not None:
            return flow
    return realm_cache.stored(realm, "flows", _load_stored_flows).get(ref)


def _load_stored_flows(realm):
    """The realm's stored flows as engine Flows, by alias and by id (three queries, once per
    realm and process; dropped from the realm cache when a flow row changes)."""
    from ..models import AuthenticationExecution, AuthenticationFlow

    rows = {f.pk: f for f in AuthenticationFlow.objects.filter(realm=realm)}
    children = {}
    for e in AuthenticationExecution.objects.filter(realm=realm).select_related("authenticator_config"):
        children.setdefault(e.flow_id, []).append(e)
    built = {}

    def build(flow_id, seen):
        if flow_id in built:
            return built[flow_id]
        if flow_id in seen:
            return None  # a cycle (sub-flow of itself): the execution stays unavailable
        row = rows[flow_id]
        executions = []
        for e in sorted(children.get(flow_id, ()), key=lambda e: (e.priority, e.pk)):
            sub = build(e.sub_flow_id, seen | {flow_id}) if e.sub_flow_id else None
            config = e.authenticator_config
            executions.append(Execution(e.requirement, e.authenticator, sub, dict(config.config) if config else {},
                                        e.priority, config.alias if config else ""))
        built[flow_id] = Flow(row.alias, tuple(executions), row.description, row.provider_id, row.pk)
        return built[flow_id]

    by_ref = {}
    for flow_id, row in rows.items():
        flow = build(flow_id, frozenset())
        by_ref[row.alias] = by_ref[row.pk] = flow
    return by_ref


def enabled_credential_types(realm):
    """The credential types some step of the realm's stored flows checks (Keycloak's
    AccountCredentialResource.getEnabledCredentialTypes): steps not DISABLED, in flows no
    DISABLED execution leads to."""
    flows = {flow.id: flow for flow in realm_cache.stored(realm, "flows", _load_stored_flows).values()}
    switched_off = set()

    def switch_off(flow):
        if flow.id not in switched_off:
            switched_off.add(flow.id)
            for execution in flow.executions:
                if execution.flow is not None:
                    switch_off(execution.flow)

    for flow in flows.values():
        for execution in flow.executions:
            if execution.flow is not None and execution.requirement == DISABLED:
                switch_off(execution.flow)
    types = set()
    for flow in flows.values():
        if flow.id in switched_off:
            continue
        for execution in flow.executions:
            step = get_authenticator(execution.authenticator) if execution.requirement != DISABLED else None
            if step is not None:
                types |= step.reference_categories(realm)
    return types


def flow_for(realm, client, binding):
    """The flow bound to ``binding``: the client's override when it has one (an override naming
    no flow is an error, as in Keycloak, never a silent fall-back), else the realm's."""
    override = (client.authentication_flow_binding_overrides or {}).get(binding) \
        if binding in CLIENT_OVERRIDABLE and client is not None else None
    ref = override or getattr(realm, BINDINGS[binding])
    flow = get_flow(realm, ref)
    if flow is None:
        logger.warning("realm %s: the %s flow %r%s does not exist", realm.name, binding, ref,
                       f" (override of client {client.client_id})" if override else "")
    return flow


# Outcomes and steps --------------------------------------------------------------------------

@dataclass
class Outcome:
    SUCCESS, ATTEMPTED, CHALLENGE, FAILURE = "success", "attempted", "challenge", "failure"
    kind: str
    response: object = None  # the page to show for CHALLENGE / FAILURE
    error: str = ""  # the event error (Keycloak's Errors)
    description: str = ""  # what a non-interactive binding (direct grant) answers the client
    final: bool = False  # the sign-in ends on this page (the user is gone: a deleted account)

    @classmethod
    def success(cls):
        return cls(cls.SUCCESS)

    @classmethod
    def attempted(cls):
        return cls(cls.ATTEMPTED)

    @classmethod
    def challenge(cls, response):
        return cls(cls.CHALLENGE, response)

    @classmethod
    def failure(cls, error, response=None, description=""):
        return cls(cls.FAILURE, response, error, description)

    @classmethod
    def end(cls, response):
        return cls(cls.CHALLENGE, response, final=True)


class Authenticator:
    """A step of a flow. ``authenticate`` runs when the flow reaches the step; ``action`` when
    the form it showed is posted back. Conditions (``is_condition``) only answer ``matches``."""

    provider_id = ""
    display_name = ""
    requires_user = False
    # Whether ``configured_for`` answers before anyone is identified (user None): Keycloak's
    # conditional-user-configured asks the steps of its sub-flow then too (the organization step
    # answers for the realm, which is how identity-first login runs).
    configured_without_user = False
    is_condition = False
    # The credential type the step checks (Keycloak's getReferenceCategory): a step in use in one
    # of the realm's flows offers that type in the account console.
    reference_category = None

    def reference_categories(self, realm):
        """The credential types this step checks in ``realm`` (Keycloak's reference category and
        optional reference categories)."""
        return {self.reference_category} - {None}

    def authenticate(self, ctx) -> Outcome:
        raise NotImplementedError

    def action(self, ctx) -> Outcome:
        return self.authenticate(ctx)

    def configured_for(self, ctx, user) -> bool:
        """Whether the user has what this step needs (e.g. an OTP credential)."""
        return True

    def matches(self, ctx, flow) -> bool:
        raise NotImplementedError

    def on_flow_success(self, ctx):
        """A condition's sub-flow succeeded (Keycloak's onParentFlowSuccess)."""


class RequiredAction:
    """Something the user must do after signing in (Keycloak's required actions).

    ``max_auth_age``: when an application asks for this action (``kc_action``), a sign-in older
    than this many seconds is made again first (Keycloak's re-authentication for sensitive
    actions); None when no re-authentication is needed."""

    provider_id = ""
    max_auth_age = None
    enabled_by_default = True  # in a new realm (Keycloak 26's built-in definitions)
    initiated_action_supported = True  # an application may ask for it (kc_action)

    def challenge(self, ctx):
        raise NotImplementedError

    def start(self, ctx) -> Outcome:
        """The action is reached: its page (CHALLENGE), or SUCCESS when there is nothing left to do."""
        return Outcome.challenge(self.challenge(ctx))

    def process(self, ctx) -> Outcome:
        """SUCCESS when done (the action is then removed from the user), else CHALLENGE."""
        raise NotImplementedError

    def evaluate_triggers(self, ctx):
        """Add this action to ``ctx.user`` when a realm rule calls for it (Keycloak's
        evaluateTriggers: an expired password); runs once, when the flow has identified the user."""


_authenticators = Registry("authenticators")


def register_authenticator(authenticator):
    """Register a step (class or instance) under its provider id; returns it (usable as a class
    decorator)."""
    return _authenticators.add_instance(authenticator, "provider_id")


def get_authenticator(provider_id):
    return _authenticators.get(provider_id)


def authenticators():
    """Every registered step, by provider id (for the Admin API and the console)."""
    return _authenticators.by_key()


