"""Client policies (Keycloak's ``clientPolicies`` and ``clientProfiles``): the hook the protocol
code calls at each event a policy may act on, and at each write of a client (REGISTER, UPDATE).

The realm's documents (validated and stored by ``realms.representation.client_policies``) are
compiled once per cached realm configuration: a realm without a policy costs one dict lookup per
request. A policy applies when none of its conditions says no and at least one says yes; its
profiles' executors then run in order, and the first that refuses answers the request."""
import json
from pathlib import Path

from realms.representation import client_policies as stored

from ..errors import OAuthError
from .conditions import CONDITIONS, evaluate
from .events import (  # noqa: F401 (the names the call sites use)
    AUTHORIZATION_REQUEST,
    PUSHED_AUTHORIZATION_REQUEST,
    REGISTER,
    TOKEN_INTROSPECT,
    TOKEN_REQUEST,
    TOKEN_REVOKE,
    UPDATE,
    USERINFO_REQUEST,
    keycloak_event,
)
from .executors import EXECUTORS

_EXTENSION = "client-policies"


def _global_profiles():
    """Keycloak's built-in profiles this server offers, their configurations filled in as a
    realm's are (every executor they name exists here, or this fails at start)."""
    profiles = json.loads((Path(__file__).parent / "profiles.json").read_text())["profiles"]
    for i, profile in enumerate(profiles):
        profile["executors"] = [
            {"executor": e["executor"], "configuration": EXECUTORS[e["executor"]].check(
                e["configuration"], f"profiles[{i}].executors[{j}]")} for j, e in enumerate(profile["executors"])]
    return profiles


GLOBAL_PROFILES = _global_profiles()


def compile_policies(attributes):
    """[(conditions, [(executor, configuration)...])] of the enabled policies, in order."""
    policies = stored.stored_policies(attributes)["policies"]
    if not policies:
        return []
    profiles = {p["name"]: p for p in GLOBAL_PROFILES}
    profiles.update({p["name"]: p for p in stored.stored_profiles(attributes)["profiles"]})
    compiled = []
    for policy in policies:
        if not policy["enabled"] or not policy["conditions"]:
            continue
        executors = [(EXECUTORS[e["executor"]], e["configuration"])
                     for name in policy["profiles"] for e in profiles[name]["executors"]]
        if executors:
            compiled.append((policy["conditions"], executors))
    return compiled


def _applies(conditions, event, client, ctx):
    verdicts = [evaluate(c, event, client, ctx) for c in conditions]
    return False not in verdicts and True in verdicts


def enforce(event, realm_config, client_config, **context):
    """Run the executors of every policy whose conditions match ``client_config`` for ``event``;
    an executor refuses by raising an OAuthError. ``context`` names what the event has
    (``request``, ``params``, ``exchange``, ``authz``, ``pushed``, ``front_channel``...)."""
    compiled = realm_config.base.extension(_EXTENSION, lambda base: compile_policies(base.realm.attributes))
    if not compiled:
        return
    client = client_config.client
    context["client_config"], context["realm_config"] = client_config, realm_config
    event = keycloak_event(event, context.get("params"))
    for conditions, executors in compiled:
        if _applies(conditions, event, client, context):
            for executor, config in executors:
                if event in executor.events:
                    executor.run(event, config, client, context)


def on_client_write(event, realm, client, **context):
    """REGISTER or UPDATE of ``client`` (unsaved): the executors of the policies that apply
    auto-configure it or refuse it (an OAuthError, ``invalid_client_metadata``). ``context``:
    ``updater`` (Keycloak's ByAuthenticatedUser...), ``authenticator_given``, ``by_admin_api``."""
    for conditions, executors in compile_policies(realm.attributes):
        if _applies(conditions, event, client, context):
            for executor, config in executors:
                executor.write(event, config, client, context)


def admin_api_write(realm, client, *, created, authenticator_given):
    """``on_client_write`` for the Admin API (its updater: an authenticated user): the refusal as
    (error, description), or None."""
    if client.protocol != "openid-connect":
        return None
    try:
        on_client_write(REGISTER if created else UPDATE, realm, client, updater="ByAuthenticatedUser",
                        authenticator_given=authenticator_given, by_admin_api=True)
    except OAuthError as exc:
        return exc.error, exc.description
    return None


def register():
    """Offer the conditions, executors and global profiles to ``realms``' validation."""
    for provider_id, (check, _) in CONDITIONS.items():
        stored.register_condition(provider_id, check)
    for provider_id, executor in EXECUTORS.items():
        stored.register_executor(provider_id, executor.check)
    for profile in GLOBAL_PROFILES:
        stored.register_global_profile(profile)
    stored.register_client_write_check("client policies", admin_api_write)
