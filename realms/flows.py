"""The sign-in flow engine (spec 1 §2, "Authentication flow"), protocol-neutral.

A flow is an ordered list of executions; each is a step (an *authenticator*, named by its
Keycloak provider id) or a sub-flow, with a requirement:

* REQUIRED: must succeed. CONDITIONAL (sub-flows): runs only when its *condition* steps hold,
  otherwise it is skipped. When a flow level has REQUIRED or CONDITIONAL executions, its
  ALTERNATIVE ones are ignored (Keycloak's rule).
* ALTERNATIVE: the first that succeeds completes its level; one that does not apply (e.g. the
  Cookie step without an SSO session) is passed over.
* DISABLED: never runs.

Steps come from a registry keyed by provider id (``realms.steps`` registers the built-in ones
from RealmsConfig.ready; other apps register theirs the same way). An execution whose provider
is not registered is treated as unavailable: passed over as an alternative, failing the flow as
a requirement. Required actions (``UPDATE_PASSWORD`` ...) run after the flow from a registry of
their own (``realms.required_actions``); one the user has but this server does not implement
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

State lives in the authentication session (``realms.auth_sessions``): which executions are done
and which one shows a form, so a POST goes to the step that asked for it. The password grant
runs the direct-grant binding on a throw-away session, where a page to show is an error.
"""
import logging
from dataclasses import dataclass, field

from . import auth_sessions, loa, messages, realm_cache, rows, sessions, signin, sso_cookie, storage, themes
from .account import devices
from .auth_sessions import AuthSession
from .registry import Registry
from .users import actions
from .web import client_address

logger = logging.getLogger("idp.flows")

REQUIRED, ALTERNATIVE, CONDITIONAL, DISABLED = "REQUIRED", "ALTERNATIVE", "CONDITIONAL", "DISABLED"
_DONE, _SKIPPED = "success", "skipped"

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
    from .models import AuthenticationExecution, AuthenticationFlow

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


class Authenticator:
    """A step of a flow. ``authenticate`` runs when the flow reaches the step; ``action`` when
    the form it showed is posted back. Conditions (``is_condition``) only answer ``matches``."""

    provider_id = ""
    display_name = ""
    requires_user = False
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


def _evaluate_triggers(ctx):
    # Keycloak evaluates the triggers of the realm's enabled required actions only.
    for action in actions.required_actions():
        if actions.action_enabled(ctx.realm, action.provider_id):
            action.evaluate_triggers(ctx)


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


# Context -------------------------------------------------------------------------------------

class AuthContext:
    """What a step sees: the request, realm, client, the authentication session and the user."""

    def __init__(self, request, realm, client, auth_session, *, is_action=False, params=None):
        self.request = request
        # The submitted form: the login page's POST, or the token request's parameters.
        self.params = request.POST if params is None else params
        self.realm = realm
        self.client = client
        self.auth_session = auth_session
        self.is_action = is_action
        self.execution_path = ""
        self.config = {}
        self.flow = None  # the flow being run (its levels of authentication, for step-up)
        self.aia = False  # the page shown is an application-initiated action's (it offers Cancel)
        self._user = None
        self.user_session = None  # an SSO session found by the Cookie step
        self.other_alternatives = False  # another alternative step could run instead of this one
        self.form_flow = None  # a form step's form actions (registration-page-form)
        self.action_parameter = ""  # what follows the action's name in kc_action (a credential id)

    @property
    def user(self):
        if self._user is None and self.auth_session.user_id:
            self._user = storage.REALM_DATABASE.get_user_by_id(self.realm, self.auth_session.user_id)
        return self._user

    def set_user(self, user):
        self._user = user
        self.auth_session.user_id = user.pk

    def add_auth_method(self, method):
        if method not in self.auth_session.auth_methods:
            self.auth_session.auth_methods.append(method)

    @property
    def locale(self):
        return messages.locale_for(self.request, self.realm, user=self._user, auth_session=self.auth_session)

    @property
    def ip_address(self):
        return client_address(self.request)

    def login_actions_url(self, name):
        """``login-actions/<name>`` for this sign-in (authenticate, registration, reset-credentials, restart)."""
        from urllib.parse import urlencode

        query = urlencode({"tab": self.auth_session.tab_id, "client_id": self.client.client_id})
        return f"/realms/{self.realm.name}/login-actions/{name}?{query}"

    @property
    def action_url(self):
        return self.login_actions_url("authenticate")

    def render(self, page, context=None, status=200):
        base = {"action_url": self.action_url, "client": self.client, "auth_session": self.auth_session,
                "login_url": self.login_actions_url("restart"), "user": self._user, "aia": self.aia}
        chosen = messages.chosen_locale(self.request, self.realm)
        if chosen:  # the locale picked on a page holds for the rest of this sign-in
            self.auth_session.notes[messages.USER_REQUEST_LOCALE] = chosen
        return themes.render(self.request, self.realm, page, {**base, **(context or {})}, status=status)

    def login_error(self, error, *, user=None, username=""):
        """Record a LOGIN_ERROR event (user_not_found, invalid_user_credentials, user_disabled ...)."""
        signin.login_error(self.realm, error, user=user, client_id=self.client.client_id,
                           ip_address=self.ip_address, username=username, details={
                               "auth_method": self.auth_session.protocol, "protocol": self.auth_session.protocol,
                               "redirect_uri": self.auth_session.client_data.get("redirect_uri", "")})


# The engine ----------------------------------------------------------------------------------

def execution_levels(flow):
    active = [e for e in flow.executions if e.requirement != DISABLED]
    conditions, required, alternatives = [], [], []
    for index, execution in enumerate(flow.executions):
        if execution not in active:
            continue
        auth = get_authenticator(execution.authenticator) if execution.authenticator else None
        if auth is not None and auth.is_condition:
            conditions.append((index, execution))
        elif execution.requirement in (REQUIRED, CONDITIONAL):
            required.append((index, execution))
        else:
            alternatives.append((index, execution))
    return conditions, required, alternatives


def _conditions_hold(ctx, flow):
    """Whether every condition of ``flow`` holds; None when one needs a user and there is none
    yet (Keycloak fails the flow then: a condition is never guessed)."""
    conditions, _, _ = execution_levels(flow)
    if not conditions:
        return False  # a conditional flow without a condition never runs (as in Keycloak)
    for _, execution in conditions:
        ctx.config = execution.config
        condition = get_authenticator(execution.authenticator)
        if condition.requires_user and ctx.user is None:
            return None
        if not condition.matches(ctx, flow):
            return False
    return True


def _flow_succeeded(ctx, flow):
    conditions, _, _ = execution_levels(flow)
    for _, execution in conditions:
        ctx.config = execution.config
        get_authenticator(execution.authenticator).on_flow_success(ctx)


def is_configured(ctx, execution, user):
    """Whether ``execution`` could run for ``user``: a registered step configured for them, or a
    sub-flow with such a step."""
    if execution.flow is not None:
        return any(is_configured(ctx, e, user) for e in execution.flow.executions if e.requirement != DISABLED)
    auth = get_authenticator(execution.authenticator)
    return auth is not None and not auth.is_condition and auth.configured_for(ctx, user)


def _run_execution(ctx, path, execution):
    if execution.flow is not None and not execution.authenticator:
        return _run_flow(ctx, execution.flow, path + ".")
    auth = get_authenticator(execution.authenticator)
    if auth is None:
        logger.debug("flow step %s is not available; passed over", execution.authenticator)
        return Outcome.attempted()
    if auth.requires_user and ctx.user is None:
        return Outcome.failure("user_not_identified")
    # A form step (registration-page-form) gets its form actions as its own sub-flow.
    ctx.execution_path, ctx.config, ctx.form_flow = path, execution.config, execution.flow
    if ctx.is_action and ctx.auth_session.current == path:
        ctx.is_action = False  # the post is consumed; later steps start afresh
        outcome = auth.action(ctx)
    else:
        outcome = auth.authenticate(ctx)
    if outcome.kind in (Outcome.CHALLENGE, Outcome.FAILURE):
        ctx.auth_session.current = path
    return outcome


def _run_flow(ctx, flow, prefix=""):
    _, required, alternatives = execution_levels(flow)
    state = ctx.auth_session.executions
    ran = False
    for index, execution in required:
        path = f"{prefix}{index}"
        if state.get(path) == _SKIPPED:
            continue
        if state.get(path) == _DONE:
            ran = True
            continue
        if execution.requirement == CONDITIONAL:
            holds = _conditions_hold(ctx, execution.flow) if execution.flow is not None else False
            if holds is None:
                return Outcome.failure("user_not_identified")
            if not holds:
                state[path] = _SKIPPED
                continue
        outcome = _run_execution(ctx, path, execution)
        if outcome.kind == Outcome.SUCCESS:
            state[path] = _DONE
            ran = True
            if execution.requirement == CONDITIONAL:
                _flow_succeeded(ctx, execution.flow)
            continue
        if outcome.kind == Outcome.ATTEMPTED:
            return Outcome.failure("required_step_unavailable")
        return outcome
    if ran:
        return Outcome.success()
    # As in Keycloak, a level whose required executions were all conditional sub-flows that did
    # not apply has its alternatives evaluated, and without any it authenticated nothing.
    for position, (index, execution) in enumerate(alternatives):
        path = f"{prefix}{index}"
        if state.get(path) == _DONE:
            return Outcome.success()
        if state.get(path) == _SKIPPED:
            continue
        if execution.flow is None and ctx.user is not None and not is_configured(ctx, execution, ctx.user):
            state[path] = _SKIPPED  # a step the user has not set up (Keycloak passes it over)
            continue
        # A step may offer "Try another way" (it then answers ATTEMPTED) when a later one could run.
        ctx.other_alternatives = ctx.user is not None and any(
            state.get(f"{prefix}{i}") != _SKIPPED and is_configured(ctx, e, ctx.user)
            for i, e in alternatives[position + 1:])
        outcome = _run_execution(ctx, path, execution)
        if outcome.kind == Outcome.SUCCESS:
            state[path] = _DONE
            return outcome
        if outcome.kind == Outcome.ATTEMPTED:
            state[path] = _SKIPPED
            continue
        return outcome
    return Outcome.attempted() if alternatives or required else Outcome.success()


REQUIRED_ACTION_UNAVAILABLE = "required_action_unavailable"
# Application-initiated actions (Keycloak's AIA): the action the client asked for with
# ``kc_action`` and how it ended, which the protocol hands back with its answer.
KC_ACTION, KC_ACTION_STATUS = "kc_action", "kc_action_status"
AIA_SUCCESS, AIA_CANCELLED, AIA_ERROR = "success", "cancelled", "error"
AIA_CANCEL_PARAM = "cancel-aia"
# Sign-ins opened by an e-mailed link end on an "account updated" page, not at a client.
END_AFTER_ACTIONS = "end_after_required_actions"
REDIRECT_NOTE = "redirect_uri"


def _pending_actions(ctx):
    """The user's required actions and this sign-in's (an e-mailed link's)."""
    return actions.pending_required_actions(ctx.realm, [*(ctx.user.required_actions or ()),
                                                *ctx.auth_session.required_actions])


def _unavailable_required_action(ctx, pending):
    """The first pending required action this server does not implement, or None."""
    for name, provider_id in pending:
        if actions.get_required_action(provider_id) is None:
            logger.warning("user %s of realm %s must %s, which this server does not implement: sign-in refused",
                           ctx.user.pk, ctx.realm.name, name)
            return name
    return None


def _run_action(ctx, action, path):
    if ctx.is_action and ctx.auth_session.current == path:
        ctx.is_action = False
        outcome = action.process(ctx)
    else:
        outcome = action.start(ctx)
    if outcome.kind != Outcome.SUCCESS:
        ctx.auth_session.current = path
    return outcome


def _action_done(ctx, name):
    user = ctx.user
    if name in (user.required_actions or ()):
        user.required_actions = [a for a in user.required_actions if a != name]
        user.save(update_fields=["required_actions"])
    ctx.auth_session.required_actions = [a for a in ctx.auth_session.required_actions if a != name]


def _run_required_actions(ctx):
    pending = _pending_actions(ctx)
    if _unavailable_required_action(ctx, pending) is not None:
        return Outcome.failure(REQUIRED_ACTION_UNAVAILABLE)
    for name, provider_id in pending:
        outcome = _run_action(ctx, actions.get_required_action(provider_id), f"required:{name}")
        if outcome.kind != Outcome.SUCCESS:
            return outcome
        _action_done(ctx, name)
    return _run_kc_action(ctx)


def _kc_action(alias):
    """(action, parameter) of a ``kc_action`` value; ``delete_credential:<id>`` carries one."""
    name, _, parameter = (alias or "").partition(":")
    return actions.get_required_action(name), parameter


def _run_kc_action(ctx):
    notes = ctx.auth_session.notes
    alias = notes.get(KC_ACTION)
    if not alias or notes.get(KC_ACTION_STATUS):
        return Outcome.success()
    action, ctx.action_parameter = _kc_action(alias)
    if action is None or not action.initiated_action_supported or not actions.action_enabled(ctx.realm, action.provider_id):
        logger.info("realm %s: kc_action %r is not an enabled required action", ctx.realm.name, alias)
        notes[KC_ACTION_STATUS] = AIA_ERROR
        return Outcome.success()
    path = f"aia:{action.provider_id}"
    if ctx.is_action and ctx.auth_session.current == path and AIA_CANCEL_PARAM in ctx.params:
        notes[KC_ACTION_STATUS] = AIA_CANCELLED
        return Outcome.success()
    ctx.aia = True
    outcome = _run_action(ctx, action, path)
    if outcome.kind == Outcome.SUCCESS:
        notes[KC_ACTION_STATUS] = AIA_SUCCESS
        _action_done(ctx, action.provider_id)
    elif outcome.kind == Outcome.FAILURE:
        notes[KC_ACTION_STATUS] = AIA_CANCELLED if outcome.error == "rejected_by_user" else AIA_ERROR
        return Outcome.success()
    return outcome


def kc_action_params(auth_session):
    """What the protocol's answer carries about an application-initiated action."""
    notes = auth_session.notes
    if not notes.get(KC_ACTION):
        return {}
    return {KC_ACTION: notes[KC_ACTION], KC_ACTION_STATUS: notes.get(KC_ACTION_STATUS, AIA_ERROR)}


def kc_action_needs_reauthentication(realm, alias, user_session):
    """Whether an application asking for ``alias`` must have the user sign in again first: the
    action asks for a recent sign-in and ``user_session``'s is older."""
    action, _ = _kc_action(alias)
    if action is None or user_session is None or action.max_auth_age is None:
        return False
    from django.utils import timezone

    from . import password_policy

    # A new password: the password policy's maxAuthAge (Keycloak's), else the action's own limit.
    limit = password_policy.max_auth_age(realm) if action.provider_id == "UPDATE_PASSWORD" else action.max_auth_age
    return (timezone.now() - user_session.auth_time).total_seconds() > limit


def run(ctx, binding=None) -> Outcome:
    """Advance the sign-in as far as it goes: SUCCESS (user known, actions done) or the page."""
    binding = binding or ctx.auth_session.binding
    if not ctx.auth_session.flow_done:
        ctx.flow = flow = flow_for(ctx.realm, ctx.client, binding)
        if flow is None:
            return Outcome.failure("flow_not_found")
        outcome = _run_flow(ctx, flow)
        if outcome.kind == Outcome.ATTEMPTED or (outcome.kind == Outcome.SUCCESS and ctx.user is None):
            return Outcome.failure("no_step_authenticated")
        if outcome.kind != Outcome.SUCCESS:
            return outcome
        ctx.auth_session.flow_done = True
        if ctx.user is not None and ctx.user.enabled:
            _evaluate_triggers(ctx)
        signin.signed_in(ctx.realm, ctx.user)
    if ctx.user is None or not ctx.user.enabled:
        return Outcome.failure("user_disabled")
    return _run_required_actions(ctx)


def run_direct_grant(request, realm, client, params, *, protocol):
    """The direct-grant binding for a password grant: ``(ctx, outcome)``, SUCCESS with
    ``ctx.user`` signed in, or a FAILURE whose ``description`` the grant answers
    (``invalid_grant``). Nothing can be shown to the user, so a step's page and any pending
    required action are errors, as in Keycloak."""
    auth_session = AuthSession(root_id="", tab_id="", realm_id=realm.pk, client_pk=client.pk, protocol=protocol,
                               client_data={})
    ctx = AuthContext(request, realm, client, auth_session, params=params)
    ctx.flow = flow = flow_for(realm, client, DIRECT_GRANT)
    if flow is None:
        return ctx, Outcome.failure("flow_not_found", description=INVALID_CREDENTIALS)
    outcome = _run_flow(ctx, flow)
    if outcome.kind != Outcome.SUCCESS or ctx.user is None:
        error = outcome.error if outcome.kind == Outcome.FAILURE else ""
        return ctx, Outcome.failure(error or "invalid_user_credentials",
                                    description=outcome.description or INVALID_CREDENTIALS)
    if not ctx.user.enabled:
        return ctx, Outcome.failure("user_disabled", description="Account disabled")
    _evaluate_triggers(ctx)
    signin.signed_in(realm, ctx.user)
    pending = _pending_actions(ctx)
    if pending:
        _unavailable_required_action(ctx, pending)  # logs an action this server lacks; the answer is the same
        return ctx, Outcome.failure("resolve_required_actions", description="Account is not fully set up")
    return ctx, Outcome.success()


# Completion ----------------------------------------------------------------------------------

_protocols = Registry("login protocols")


def register_protocol(name, complete, fail):
    """``complete(ctx, user_session) -> HttpResponse`` answers the client once the user is signed
    in; ``fail(ctx, error) -> HttpResponse`` when the sign-in cannot succeed."""
    _protocols.add(name, (complete, fail))


def provider_ids():
    """{SPI name: registered provider ids}, for the Admin API's server info."""
    return {"login-protocol": sorted(p for p in _protocols if p != LOGIN_ACTIONS),
            "authenticator": sorted(_authenticators),
            "required-action": [a.provider_id for a in actions.required_actions()]}


# The "protocol" of sign-ins an e-mailed link opens in a browser without one: they end on a page
# of their own (``END_AFTER_ACTIONS``), never at a client.
LOGIN_ACTIONS = "login-actions"


def _account_updated(ctx, user_session=None):
    return ctx.render("info.html", {"message_key": "accountUpdatedMessage",
                                    "back_url": ctx.auth_session.notes.get(REDIRECT_NOTE, "")})


def _login_actions_failed(ctx, error):
    return ctx.render("info.html", {"is_error": True, "message_key": "invalidCodeMessage"}, status=400)


def register_login_actions():
    """Called from RealmsConfig.ready."""
    register_protocol(LOGIN_ACTIONS, _account_updated, _login_actions_failed)


def establish_sso_session(ctx):
    """The SSO session for the signed-in user: the one the Cookie step found, or a new one.
    A different user signing in in the same browser ends the previous user's session."""
    auth_session = ctx.auth_session
    existing = ctx.user_session
    if existing is None and auth_session.sso_session_id:
        existing = sessions.get_valid_session(ctx.realm, auth_session.sso_session_id)
    if existing is None:
        existing = sso_cookie.session_from_request(ctx.request, ctx.realm)
    if existing is not None and existing.user_id == ctx.user.pk:
        if auth_session.auth_methods:  # the user proved themselves again (prompt=login, max_age)
            sessions.reauthenticated(existing, auth_session.auth_methods)
        sessions.touch(existing)
        loa.store(auth_session, existing)
        return existing
    if existing is not None:
        sessions.end_session(existing, reason=sessions.REASON_LOGOUT)
    user_session = sessions.create_user_session(
        ctx.realm, ctx.user, ip_address=ctx.ip_address, auth_methods=auth_session.auth_methods,
        remember_me=auth_session.remember_me, notes={devices.NOTE: devices.of_request(ctx.request)},
    )
    loa.store(auth_session, user_session)
    return user_session


def advance(request, realm, client, auth_session, *, is_action=False, interactive=True):
    """Run the flow for this authentication session and answer the browser: the next page, or,
    once signed in, the protocol's response with the SSO cookie set. When the client forbade
    interaction (OIDC prompt=none), any page to show fails with ``login_required`` (no user
    yet) or ``interaction_required`` (a required action is pending)."""
    ctx = AuthContext(request, realm, client, auth_session, is_action=is_action)
    complete, fail = _protocols[auth_session.protocol]
    outcome = run(ctx)
    if not interactive and outcome.kind != Outcome.SUCCESS:
        auth_sessions.discard(auth_session)
        return fail(ctx, "interaction_required" if auth_session.flow_done else "login_required")
    if outcome.kind == Outcome.SUCCESS and auth_session.notes.get(END_AFTER_ACTIONS):
        auth_sessions.discard(auth_session)
        return _account_updated(ctx)
    if outcome.kind == Outcome.SUCCESS:
        with rows.batch():  # a new sign-in's sessions, code and event in one round trip
            user_session = establish_sso_session(ctx)
            response = complete(ctx, user_session)
        auth_sessions.discard(auth_session)
        return sso_cookie.set_cookie(response, request, realm, user_session)
    if outcome.response is None:
        auth_sessions.discard(auth_session)
        return fail(ctx, outcome.error)
    auth_sessions.save(auth_session, realm)
    return auth_sessions.set_cookie(outcome.response, request, realm, auth_session)
