"""The sign-in flow engine: requirements, alternatives, sub-flows, conditions, registries,
required actions, and a step added from outside (an OTP-like step) without engine changes."""
import pytest
from django.http import HttpResponse
from django.test import RequestFactory

from realms.models import Credential, User
from realms.signin import engine, flows
from realms.signin.flows import (
    ALTERNATIVE,
    CONDITIONAL,
    DISABLED,
    REQUIRED,
    Authenticator,
    Flow,
    Outcome,
    step,
    sub_flow,
)
from realms.sso.auth_sessions import AuthSession
from tests.passwords import holds_password


class Pass(Authenticator):
    """Identifies the user named in its config."""

    provider_id = "test-pass"

    def authenticate(self, ctx):
        ctx.set_user(User.objects.get(realm=ctx.realm, username=ctx.config["username"]))
        ctx.add_auth_method(ctx.config.get("method", "test"))
        return Outcome.success()


class Skip(Authenticator):
    provider_id = "test-skip"

    def authenticate(self, ctx):
        return Outcome.attempted()


class Ask(Authenticator):
    """Shows a form; succeeds when the posted answer is "yes"."""

    provider_id = "test-ask"

    def authenticate(self, ctx):
        return Outcome.challenge(HttpResponse(f"ask {ctx.execution_path}"))

    def action(self, ctx):
        if ctx.request.POST.get("answer") == "yes":
            ctx.add_auth_method(f"ask{ctx.execution_path}")
            return Outcome.success()
        return Outcome.failure("wrong_answer", HttpResponse(f"wrong {ctx.execution_path}"))


class FakeOtp(Authenticator):
    """Stands in for the OTP step a later issue adds: registered from outside the engine,
    configured only for users with an OTP credential."""

    provider_id = "auth-otp-form"
    requires_user = True

    def authenticate(self, ctx):
        return Outcome.challenge(HttpResponse("otp"))

    def action(self, ctx):
        if ctx.request.POST.get("otp") == "123456":
            ctx.add_auth_method("otp")
            return Outcome.success()
        return Outcome.failure("invalid_user_credentials", HttpResponse("otp wrong"))

    def configured_for(self, ctx, user):
        return user.credentials.filter(type=Credential.OTP).exists()


@pytest.fixture
def registry(monkeypatch):
    for cls in (Pass, Skip, Ask, FakeOtp):
        monkeypatch.setitem(flows._authenticators, cls.provider_id, cls())
    custom = {}
    monkeypatch.setattr(flows, "_flow_loaders", [lambda realm, alias: custom.get(alias)])
    return custom


@pytest.fixture
def make_ctx(realm, client_app):
    factory = RequestFactory()
    auth_session = AuthSession(root_id="root", tab_id="tab", realm_id=realm.pk, client_pk=client_app.pk,
                               protocol="openid-connect", client_data={"redirect_uri": "https://app.example/cb"})

    def make(post=None):
        request = factory.post("/", post) if post is not None else factory.get("/")
        return engine.AuthContext(request, realm, client_app, auth_session, is_action=post is not None)

    return make


def _use(realm, registry, flow):
    registry[flow.alias] = flow
    realm.browser_flow = flow.alias


def test_builtin_browser_flow_matches_keycloak(realm):
    providers = [(e.authenticator or e.flow.alias, e.requirement) for e in flows.BROWSER_FLOW.executions]
    assert providers == [("auth-cookie", ALTERNATIVE), ("auth-spnego", DISABLED),
                         ("identity-provider-redirector", ALTERNATIVE), ("Organization", ALTERNATIVE),
                         ("forms", ALTERNATIVE)]
    forms = flows.BROWSER_FLOW.executions[4].flow
    assert [(e.authenticator or e.flow.alias, e.requirement) for e in forms.executions] == [
        ("auth-username-password-form", REQUIRED), ("Browser - Conditional 2FA", CONDITIONAL)]
    # A new realm stores it, and the engine runs the stored copy.
    assert flows.get_flow(realm, "browser") == flows.BROWSER_FLOW


def test_default_flow_without_cookie_shows_the_login_form(make_ctx):
    outcome = engine.run(make_ctx())
    assert outcome.kind == Outcome.CHALLENGE
    assert b'name="username"' in outcome.response.content
    assert make_ctx().auth_session.current == "4.0"  # forms, after the Organization sub-flow passed over


def test_first_succeeding_alternative_completes_and_skips_the_rest(realm, user, registry, make_ctx):
    _use(realm, registry, Flow("alts", (step("test-skip", ALTERNATIVE), step("test-pass", ALTERNATIVE, username="alice"),
                                        step("test-ask", ALTERNATIVE))))
    ctx = make_ctx()
    assert engine.run(ctx).kind == Outcome.SUCCESS
    assert ctx.user == user and ctx.auth_session.executions == {"0": "skipped", "1": "success"}


def test_disabled_steps_never_run(realm, user, registry, make_ctx):
    _use(realm, registry, Flow("d", (step("test-ask", DISABLED), step("test-pass", REQUIRED, username="alice"))))
    assert engine.run(make_ctx()).kind == Outcome.SUCCESS


def test_alternatives_are_ignored_beside_required_steps(realm, user, registry, make_ctx):
    _use(realm, registry, Flow("mixed", (step("test-pass", ALTERNATIVE, username="alice"),
                                         step("test-ask", REQUIRED))))
    outcome = engine.run(make_ctx())
    assert outcome.kind == Outcome.CHALLENGE and outcome.response.content == b"ask 1"


def test_required_steps_run_in_order_and_posts_go_to_the_asking_step(realm, user, registry, make_ctx):
    _use(realm, registry, Flow("seq", (step("test-pass", REQUIRED, username="alice"), step("test-ask", REQUIRED),
                                       sub_flow("more", REQUIRED, step("test-ask", REQUIRED)))))
    assert engine.run(make_ctx()).response.content == b"ask 1"
    wrong = engine.run(make_ctx({"answer": "no"}))
    assert wrong.kind == Outcome.FAILURE and wrong.response.content == b"wrong 1"
    assert engine.run(make_ctx({"answer": "yes"})).response.content == b"ask 2.0"
    ctx = make_ctx({"answer": "yes"})
    assert engine.run(ctx).kind == Outcome.SUCCESS
    assert ctx.auth_session.auth_methods == ["test", "ask1", "ask2.0"]


def test_required_step_that_does_not_apply_fails_the_flow(realm, registry, make_ctx):
    _use(realm, registry, Flow("r", (step("test-skip", REQUIRED),)))
    assert engine.run(make_ctx()).kind == Outcome.FAILURE


def test_unregistered_step_is_passed_over_as_alternative(realm, user, registry, make_ctx):
    _use(realm, registry, Flow("u1", (step("not-installed", ALTERNATIVE), step("test-pass", ALTERNATIVE, username="alice"))))
    assert engine.run(make_ctx()).kind == Outcome.SUCCESS


def test_unregistered_step_fails_the_flow_as_required(realm, user, registry, make_ctx):
    _use(realm, registry, Flow("u2", (step("test-pass", REQUIRED, username="alice"), step("not-installed", REQUIRED))))
    outcome = engine.run(make_ctx())
    assert outcome.kind == Outcome.FAILURE and outcome.error == "required_step_unavailable"


def test_flow_where_nothing_authenticates_fails(realm, registry, make_ctx):
    _use(realm, registry, Flow("none", (step("test-skip", ALTERNATIVE),)))
    outcome = engine.run(make_ctx())
    assert outcome.kind == Outcome.FAILURE and outcome.response is None


def _otp_flow():
    return Flow("with-otp", (
        step("test-pass", REQUIRED, username="alice", method="pwd"),
        sub_flow("2fa", CONDITIONAL, step("conditional-user-configured", REQUIRED), step("auth-otp-form", ALTERNATIVE)),
    ))


def test_conditional_sub_flow_is_skipped_when_user_has_no_otp(realm, user, registry, make_ctx):
    _use(realm, registry, _otp_flow())
    ctx = make_ctx()
    assert engine.run(ctx).kind == Outcome.SUCCESS
    assert ctx.auth_session.executions["1"] == "skipped"


def test_conditional_sub_flow_runs_a_step_registered_from_outside(realm, user, registry, make_ctx):
    Credential.objects.create(user=user, type=Credential.OTP, secret_data="seed")
    _use(realm, registry, _otp_flow())
    assert engine.run(make_ctx()).response.content == b"otp"
    assert engine.run(make_ctx({"otp": "000000"})).response.content == b"otp wrong"
    ctx = make_ctx({"otp": "123456"})
    assert engine.run(ctx).kind == Outcome.SUCCESS
    assert ctx.auth_session.auth_methods == ["pwd", "otp"]


def test_builtin_browser_flow_asks_for_otp_once_the_step_exists(realm, user_with_password, registry, make_ctx):
    from tests.oidc.browser.conftest import PASSWORD

    Credential.objects.create(user=user_with_password, type=Credential.OTP, secret_data="seed")
    engine.run(make_ctx())
    outcome = engine.run(make_ctx({"username": "bob", "password": PASSWORD}))
    assert outcome.kind == Outcome.CHALLENGE and outcome.response.content == b"otp"


def test_conditional_flow_without_condition_never_runs(realm, user, registry, make_ctx):
    _use(realm, registry, Flow("c", (step("test-pass", REQUIRED, username="alice"),
                                     sub_flow("x", CONDITIONAL, step("test-ask", REQUIRED)))))
    assert engine.run(make_ctx()).kind == Outcome.SUCCESS


def test_required_action_update_password(realm, user, registry, make_ctx):
    user.required_actions = ["UPDATE_PASSWORD"]
    user.save()
    _use(realm, registry, Flow("p", (step("test-pass", REQUIRED, username="alice"),)))
    outcome = engine.run(make_ctx())
    assert outcome.kind == Outcome.CHALLENGE and b'name="password-new"' in outcome.response.content
    mismatch = engine.run(make_ctx({"password-new": "a-new-password", "password-confirm": "other"}))
    assert mismatch.kind == Outcome.CHALLENGE and b"Passwords don&#x27;t match." in mismatch.response.content
    assert b'aria-describedby="input-error-password-confirm"' in mismatch.response.content
    assert engine.run(make_ctx({"password-new": "a-new-password", "password-confirm": "a-new-password"})).kind \
        == Outcome.SUCCESS
    user.refresh_from_db()
    assert user.required_actions == []
    assert holds_password(user, "a-new-password")


def test_unknown_required_action_refuses_sign_in(realm, user, registry, make_ctx):
    # A realm imported from Keycloak keeps CONFIGURE_TOTP on its users: skipping it would drop
    # the requirement silently, so the sign-in is refused (before any other action runs).
    user.required_actions = ["UPDATE_PASSWORD", "NOT_INSTALLED_ACTION"]
    user.save()
    _use(realm, registry, Flow("p", (step("test-pass", REQUIRED, username="alice"),)))
    outcome = engine.run(make_ctx())
    assert outcome.kind == Outcome.FAILURE and outcome.error == "required_action_unavailable"
    assert outcome.response is None  # the protocol answers the client with an error


def test_disabled_user_cannot_finish(realm, user, registry, make_ctx):
    user.enabled = False
    user.save()
    _use(realm, registry, Flow("p", (step("test-pass", REQUIRED, username="alice"),)))
    outcome = engine.run(make_ctx())
    assert outcome.kind == Outcome.FAILURE and outcome.error == "user_disabled"


def test_unknown_flow_alias_fails(realm, registry, make_ctx):
    realm.browser_flow = "no such flow"
    assert engine.run(make_ctx()).error == "flow_not_found"
