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
refuses the sign-in (it is never skipped: that would drop the requirement silently).

A flow runs for a *binding* (its purpose): browser, direct grant, registration, reset
credentials, first broker login. The realm names the flow of each binding; a client's
``authenticationFlowBindingOverrides`` replaces the browser and direct-grant ones (Keycloak's
AuthenticationFlowResolver). Keycloak 26's built-in flows are defined here in code; stored flows
plug in through flow loaders (docs/decisions/0006-sign-in-flow-engine.md, 0014).

State lives in the authentication session (``realms.auth_sessions``): which executions are done
and which one shows a form, so a POST goes to the step that asked for it. The password grant
runs the direct-grant binding on a throw-away session, where a page to show is an error.
"""
import logging
from dataclasses import dataclass, field

from django.db import transaction

from . import auth_sessions, loa, messages, sessions, signin, sso_cookie, themes
from .account import devices
from .auth_sessions import AuthSession
from .models import User
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
    authenticator: str = ""  # provider id of a step; empty for a sub-flow
    flow: "Flow | None" = None
    config: dict = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class Flow:
    alias: str
    executions: tuple


def step(provider_id, requirement, **config):
    return Execution(requirement=requirement, authenticator=provider_id, config=config)


def sub_flow(alias, requirement, *executions):
    return Execution(requirement=requirement, flow=Flow(alias, tuple(executions)))


# Keycloak 26's built-in flows, one per binding (aliases and provider ids as Keycloak's).
BROWSER_FLOW = Flow("browser", (
    step("auth-cookie", ALTERNATIVE),
    step("auth-spnego", DISABLED),
    step("identity-provider-redirector", ALTERNATIVE),
    sub_flow("forms", ALTERNATIVE,
        step("auth-username-password-form", REQUIRED),
        sub_flow("Browser - Conditional 2FA", CONDITIONAL,
            step("conditional-user-configured", REQUIRED),
            step("auth-otp-form", ALTERNATIVE),
            step("webauthn-authenticator", DISABLED),
            step("auth-recovery-authn-code-form", DISABLED),
        ),
    ),
))

DIRECT_GRANT_FLOW = Flow("direct grant", (
    step("direct-grant-validate-username", REQUIRED),
    step("direct-grant-validate-password", REQUIRED),
    sub_flow("Direct Grant - Conditional OTP", CONDITIONAL,
        step("conditional-user-configured", REQUIRED),
        step("direct-grant-validate-otp", REQUIRED),
    ),
))

REGISTRATION_FLOW = Flow("registration", (
    Execution(REQUIRED, "registration-page-form", Flow("registration form", (
        step("registration-user-creation", REQUIRED),
        step("registration-password-action", REQUIRED),
        step("registration-recaptcha-action", DISABLED),
        step("registration-terms-and-conditions", DISABLED),
    ))),
))

RESET_CREDENTIALS_FLOW = Flow("reset credentials", (
    step("reset-credentials-choose-user", REQUIRED),
    step("reset-credential-email", REQUIRED),
    step("reset-password", REQUIRED),
    sub_flow("Reset - Conditional OTP", CONDITIONAL,
        step("conditional-user-configured", REQUIRED),
        step("reset-otp", REQUIRED),
    ),
))

FIRST_BROKER_LOGIN_FLOW = Flow("first broker login", (
    step("idp-review-profile", REQUIRED, **{"update.profile.on.first.login": "missing"}),
    sub_flow("User creation or linking", REQUIRED,
        step("idp-create-user-if-unique", ALTERNATIVE, **{"require.password.update.after.registration": "false"}),
        sub_flow("Handle Existing Account", ALTERNATIVE,
            step("idp-confirm-link", REQUIRED),
            sub_flow("Account verification options", REQUIRED,
                step("idp-email-verification", ALTERNATIVE),
                sub_flow("Verify Existing Account by Re-authentication", ALTERNATIVE,
                    step("idp-username-password-form", REQUIRED),
                    sub_flow("First broker login - Conditional OTP", CONDITIONAL,
                        step("conditional-user-configured", REQUIRED),
                        step("auth-otp-form", REQUIRED),
                    ),
                ),
            ),
        ),
    ),
    sub_flow("First Broker Login - Conditional Organization", CONDITIONAL,
        step("conditional-user-configured", REQUIRED),
        step("idp-add-organization-member", REQUIRED),
    ),
))

BUILTIN_FLOWS = {flow.alias: flow for flow in (
    BROWSER_FLOW, DIRECT_GRANT_FLOW, REGISTRATION_FLOW, RESET_CREDENTIALS_FLOW, FIRST_BROKER_LOGIN_FLOW)}
_flow_loaders = []


def register_flow_loader(loader):
    """``loader(realm, ref) -> Flow | None`` where ``ref`` is a flow's alias (the realm's
    bindings) or id (a client's override, as Keycloak stores it); consulted before the built-in
    flows, so a realm with a stored (copied and changed) flow gets it."""
    if loader not in _flow_loaders:
        _flow_loaders.append(loader)


def get_flow(realm, ref):
    for loader in _flow_loaders:
        flow = loader(realm, ref)
        if flow is not None:
            return flow
    return BUILTIN_FLOWS.get(ref)


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
    """Something the user must do after signing in (Keycloak's required actions)."""

    provider_id = ""

    def challenge(self, ctx):
        raise NotImplementedError

    def process(self, ctx) -> Outcome:
        """SUCCESS when done (the action is then removed from the user), else CHALLENGE."""
        raise NotImplementedError

    def evaluate_triggers(self, ctx):
        """Add this action to ``ctx.user`` when a realm rule calls for it (Keycloak's
        evaluateTriggers: an expired password); runs once, when the flow has identified the user."""


def _evaluate_triggers(ctx):
    for action in _required_actions.values():
        action.evaluate_triggers(ctx)


_authenticators = {}
_required_actions = {}


def register_authenticator(authenticator):
    """Register a step (class or instance) under its provider id; returns it (usable as a class
    decorator)."""
    instance = authenticator() if isinstance(authenticator, type) else authenticator
    _authenticators[instance.provider_id] = instance
    return authenticator


def get_authenticator(provider_id):
    return _authenticators.get(provider_id)


def register_required_action(action):
    instance = action() if isinstance(action, type) else action
    _required_actions[instance.provider_id] = instance
    return action


def get_required_action(provider_id):
    return _required_actions.get(provider_id)


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
        self._user = None
        self.user_session = None  # an SSO session found by the Cookie step
        self.other_alternatives = False  # another alternative step could run instead of this one

    @property
    def user(self):
        if self._user is None and self.auth_session.user_id:
            self._user = User.objects.filter(pk=self.auth_session.user_id, realm=self.realm).first()
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

    @property
    def action_url(self):
        from urllib.parse import urlencode

        query = urlencode({"tab": self.auth_session.tab_id, "client_id": self.client.client_id})
        return f"/realms/{self.realm.name}/login-actions/authenticate?{query}"

    def render(self, page, context=None, status=200):
        base = {"action_url": self.action_url, "client": self.client, "auth_session": self.auth_session,
                "user": self._user}
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
    conditions, _, _ = execution_levels(flow)
    if not conditions:
        return False  # a conditional flow without a condition never runs (as in Keycloak)
    for _, execution in conditions:
        ctx.config = execution.config
        if not get_authenticator(execution.authenticator).matches(ctx, flow):
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
    if execution.flow is not None:
        return _run_flow(ctx, execution.flow, path + ".")
    auth = get_authenticator(execution.authenticator)
    if auth is None:
        logger.debug("flow step %s is not available; passed over", execution.authenticator)
        return Outcome.attempted()
    if auth.requires_user and ctx.user is None:
        return Outcome.failure("user_not_identified")
    ctx.execution_path, ctx.config = path, execution.config
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
    if required:
        for index, execution in required:
            path = f"{prefix}{index}"
            if state.get(path) in (_DONE, _SKIPPED):
                continue
            if execution.requirement == CONDITIONAL:
                if execution.flow is None or not _conditions_hold(ctx, execution.flow):
                    state[path] = _SKIPPED
                    continue
            outcome = _run_execution(ctx, path, execution)
            if outcome.kind == Outcome.SUCCESS:
                state[path] = _DONE
                if execution.requirement == CONDITIONAL:
                    _flow_succeeded(ctx, execution.flow)
                continue
            if outcome.kind == Outcome.ATTEMPTED:
                return Outcome.failure("required_step_unavailable")
            return outcome
        return Outcome.success()
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
    return Outcome.attempted() if alternatives else Outcome.success()


REQUIRED_ACTION_UNAVAILABLE = "required_action_unavailable"


def _unavailable_required_action(ctx):
    """The first required action of the user this server does not implement, or None."""
    for name in ctx.user.required_actions or ():
        if get_required_action(name) is None:
            logger.warning("user %s of realm %s must %s, which this server does not implement: sign-in refused",
                           ctx.user.pk, ctx.realm.name, name)
            return name
    return None


def _run_required_actions(ctx):
    user = ctx.user
    if _unavailable_required_action(ctx) is not None:
        return Outcome.failure(REQUIRED_ACTION_UNAVAILABLE)
    for name in list(user.required_actions or ()):
        action = get_required_action(name)
        path = f"required:{name}"
        if ctx.is_action and ctx.auth_session.current == path:
            ctx.is_action = False
            outcome = action.process(ctx)
            if outcome.kind != Outcome.SUCCESS:
                return outcome
            user.required_actions = [a for a in user.required_actions if a != name]
            user.save(update_fields=["required_actions"])
            continue
        ctx.auth_session.current = path
        return Outcome.challenge(action.challenge(ctx))
    return _run_asked_action(ctx)


# Auth-session notes: the action the application asked for (Keycloak's kc_action, an
# application-initiated action), run once after the user's own required actions, and its outcome
# (the protocol tells the application, as Keycloak's kc_action_status).
KC_ACTION = "kc_action"
KC_ACTION_STATUS = "kc_action_status"


def _run_asked_action(ctx):
    notes = ctx.auth_session.notes
    action = get_required_action(notes.get(KC_ACTION, ""))
    if action is None or notes.get(KC_ACTION_STATUS):
        return Outcome.success()
    path = f"{KC_ACTION}:{action.provider_id}"
    if ctx.is_action and ctx.auth_session.current == path:
        ctx.is_action = False
        outcome = action.process(ctx)
        if outcome.kind == Outcome.SUCCESS:
            notes[KC_ACTION_STATUS] = "success"
        return outcome
    ctx.auth_session.current = path
    return Outcome.challenge(action.challenge(ctx))


def run(ctx, binding=BROWSER) -> Outcome:
    """Advance the sign-in as far as it goes: SUCCESS (user known, actions done) or the page."""
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
    if ctx.user.required_actions:
        _unavailable_required_action(ctx)  # logs an action this server lacks; the answer is the same
        return ctx, Outcome.failure("resolve_required_actions", description="Account is not fully set up")
    return ctx, Outcome.success()


# Completion ----------------------------------------------------------------------------------

_protocols = {}


def register_protocol(name, complete, fail):
    """``complete(ctx, user_session) -> HttpResponse`` answers the client once the user is signed
    in; ``fail(ctx, error) -> HttpResponse`` when the sign-in cannot succeed."""
    _protocols[name] = (complete, fail)


def provider_ids():
    """{SPI name: registered provider ids}, for the Admin API's server info."""
    return {"login-protocol": sorted(_protocols), "authenticator": sorted(_authenticators),
            "required-action": sorted(_required_actions)}


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
    if outcome.kind == Outcome.SUCCESS:
        with transaction.atomic():
            user_session = establish_sso_session(ctx)
            response = complete(ctx, user_session)
        auth_sessions.discard(auth_session)
        return sso_cookie.set_cookie(response, request, realm, user_session)
    if outcome.response is None:
        auth_sessions.discard(auth_session)
        return fail(ctx, outcome.error)
    auth_sessions.save(auth_session, realm)
    return auth_sessions.set_cookie(outcome.response, request, realm, auth_session)
