"""The sign-in engine: runs a realm's flow for a binding over an authentication session, then the
user's required actions and an application-initiated action, and completes the sign-in through
the protocol that started it (``register_protocol``). The flows and the step interfaces are
``realms.signin.flows``; state lives in the authentication session, so a POST goes to the step that
showed the form."""
import logging
from dataclasses import dataclass

from ..data import rows
from ..http import messages, themes
from ..http.web import client_address
from ..registry import Registry
from ..sso import auth_sessions, devices, sessions, sso_cookie
from ..sso.auth_sessions import AuthSession
from ..users import actions, storage
from . import loa, passwords
from .flows import (
    CONDITIONAL,
    DIRECT_GRANT,
    DISABLED,
    INVALID_CREDENTIALS,
    REQUIRED,
    Flow,
    Outcome,
    authenticators,
    flow_for,
    get_authenticator,
    get_flow,
)

logger = logging.getLogger("idp.flows")
_DONE, _SKIPPED = "success", "skipped"  # an execution's state in the authentication session


@dataclass(frozen=True)
class Stop:
    """Where a sign-in waits for the person's answer: an execution of the flow (by its path in the
    flow, ``0.1``), one of the user's required actions (by name), or the application-initiated
    action (by provider id). The authentication session keeps ``key``; its form is the one stored
    before these were named (``0.1``, ``required:NAME``, ``aia:ID``), so a sign-in in flight resumes."""

    kind: str
    name: str

    @classmethod
    def execution(cls, path):
        return cls("", path)

    @classmethod
    def required_action(cls, name):
        return cls("required", name)

    @classmethod
    def application_initiated(cls, provider_id):
        return cls("aia", provider_id)

    @property
    def key(self):
        return f"{self.kind}:{self.name}" if self.kind else self.name

    def answered(self, ctx):
        """Whether this request posts the answer to the form shown at this stop."""
        return ctx.is_action and ctx.auth_session.current == self.key

    def wait(self, ctx):
        ctx.auth_session.current = self.key


def _evaluate_triggers(ctx):
    # Keycloak evaluates the triggers of the realm's enabled required actions only.
    for action in actions.required_actions():
        if actions.action_enabled(ctx.realm, action.provider_id):
            action.evaluate_triggers(ctx)


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
        passwords.login_error(self.realm, error, user=user, client_id=self.client.client_id,
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
    stop = Stop.execution(path)
    if stop.answered(ctx):
        ctx.is_action = False  # the post is consumed; later steps start afresh
        outcome = auth.action(ctx)
    else:
        outcome = auth.authenticate(ctx)
    if outcome.kind in (Outcome.CHALLENGE, Outcome.FAILURE):
        stop.wait(ctx)
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
            if execution.flow is not None and not execution.authenticator:
                # A sub-flow that authenticated nothing leaves its level unsuccessful, so an
                # alternative parent is passed over (Keycloak: the Organization sub-flow whose
                # identity-first step found no organization gives way to the password form).
                return outcome
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


def _run_action(ctx, action, stop):
    if stop.answered(ctx):
        ctx.is_action = False
        outcome = action.process(ctx)
    else:
        outcome = action.start(ctx)
    if outcome.kind != Outcome.SUCCESS:
        stop.wait(ctx)
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
        outcome = _run_action(ctx, actions.get_required_action(provider_id), Stop.required_action(name))
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
    stop = Stop.application_initiated(action.provider_id)
    if stop.answered(ctx) and AIA_CANCEL_PARAM in ctx.params:
        notes[KC_ACTION_STATUS] = AIA_CANCELLED
        return Outcome.success()
    ctx.aia = True
    outcome = _run_action(ctx, action, stop)
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

    from ..credentials import password_policy

    # A new password: the password policy's maxAuthAge (Keycloak's), else the action's own limit.
    limit = password_policy.max_auth_age(realm) if action.provider_id == "UPDATE_PASSWORD" else action.max_auth_age
    return (timezone.now() - user_session.auth_time).total_seconds() > limit


# Notes the SSO session created by this sign-in carries (the identity provider it came through).
USER_SESSION_NOTES = "user_session_notes"
# The flow a sign-in runs instead of its binding's (a brokered sign-in's first or post broker
# login flow, which the identity provider names); "" runs no step (the user is already known).
FLOW_NOTE = "flow"
_flow_ends = Registry("flow ends")


def register_flow_end(binding, ended):
    """``ended(ctx) -> Outcome`` runs when ``binding``'s flow succeeded: SUCCESS to go on, or
    the page or failure to answer. It may switch the sign-in to another flow (``switch_flow``),
    which then runs before the sign-in goes on (a brokered user's post broker login flow)."""
    _flow_ends.add(binding, ended)


def switch_flow(auth_session, binding, flow_ref=None):
    """Run ``binding``'s flow next in this sign-in, from its start (``flow_ref`` names another
    flow for it, see FLOW_NOTE); the user found so far is kept."""
    auth_session.binding = binding
    auth_session.executions, auth_session.current, auth_session.flow_done = {}, "", False
    if flow_ref is None:
        auth_session.notes.pop(FLOW_NOTE, None)
    else:
        auth_session.notes[FLOW_NOTE] = flow_ref


def _flow_of(ctx, binding):
    notes = ctx.auth_session.notes
    if FLOW_NOTE not in notes:
        return flow_for(ctx.realm, ctx.client, binding)
    return get_flow(ctx.realm, notes[FLOW_NOTE]) if notes[FLOW_NOTE] else Flow("", ())


def run(ctx) -> Outcome:
    """Advance the sign-in as far as it goes: SUCCESS (user known, actions done) or the page."""
    while not ctx.auth_session.flow_done:
        binding = ctx.auth_session.binding
        ctx.flow = flow = _flow_of(ctx, binding)
        if flow is None:
            return Outcome.failure("flow_not_found")
        outcome = _run_flow(ctx, flow)
        if outcome.kind == Outcome.ATTEMPTED or (outcome.kind == Outcome.SUCCESS and ctx.user is None):
            return Outcome.failure("no_step_authenticated")
        if outcome.kind != Outcome.SUCCESS:
            return outcome
        ended = _flow_ends.get(binding)
        if ended is not None:
            outcome = ended(ctx)
            if outcome.kind != Outcome.SUCCESS:
                return outcome
            if ctx.auth_session.binding != binding:
                continue  # switched to the next flow
        ctx.auth_session.flow_done = True
        if ctx.user is not None and ctx.user.enabled:
            _evaluate_triggers(ctx)
        passwords.signed_in(ctx.realm, ctx.user)
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
    passwords.signed_in(realm, ctx.user)
    pending = _pending_actions(ctx)
    if pending:
        _unavailable_required_action(ctx, pending)  # logs an action this server lacks; the answer is the same
        return ctx, Outcome.failure("resolve_required_actions", description="Account is not fully set up")
    return ctx, Outcome.success()


# Completion ----------------------------------------------------------------------------------

_protocols = Registry("login protocols")
_unlisted = set()  # ends of sign-ins that are no protocol a client speaks (login-actions, the console)


def register_protocol(name, complete, fail, *, listed=True):
    """``complete(ctx, user_session) -> HttpResponse`` answers the client once the user is signed
    in; ``fail(ctx, error) -> HttpResponse`` when the sign-in cannot succeed. ``listed``: named
    in the server info as a protocol clients may use."""
    _protocols.add(name, (complete, fail))
    if not listed:
        _unlisted.add(name)


def provider_ids():
    """{SPI name: registered provider ids}, for the Admin API's server info."""
    return {"login-protocol": sorted(p for p in _protocols if p not in _unlisted),
            "authenticator": [a.provider_id for a in authenticators()],
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
    register_protocol(LOGIN_ACTIONS, _account_updated, _login_actions_failed, listed=False)


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
        remember_me=auth_session.remember_me,
        notes={devices.NOTE: devices.of_request(ctx.request), **auth_session.notes.get(USER_SESSION_NOTES, {})},
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
    if outcome.final:
        auth_sessions.discard(auth_session)
        return outcome.response
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
