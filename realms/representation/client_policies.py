"""Client policies and profiles (Keycloak's ``clientPolicies`` / ``clientProfiles``): their shape,
validation and storage. ``realms`` knows no protocol: the conditions, executors and built-in
(global) profiles it accepts are those a protocol registered from its ``AppConfig.ready()``; a
document naming anything else is refused where it is written, never kept unenforced.

Stored as Keycloak stores them: JSON strings in the realm attributes ``client-policies.policies``
and ``client-policies.profiles``; those two keys are never shown or written as plain attributes."""
import json

from ..registry import Registry
from .fields import RepresentationError, as_bool, as_dict, as_list, as_str, at

POLICIES_ATTRIBUTE = "client-policies.policies"
PROFILES_ATTRIBUTE = "client-policies.profiles"
RESERVED_ATTRIBUTES = (POLICIES_ATTRIBUTE, PROFILES_ATTRIBUTE)

# provider id -> check(configuration, path) returning the configuration kept (raises
# RepresentationError on a value the provider cannot honour).
_conditions = Registry("client policy conditions")
_executors = Registry("client profile executors")
# name -> the profile as Keycloak writes it (read-only: Keycloak's "global" profiles).
_global_profiles = Registry("global client profiles")


def register_condition(provider_id, check):
    _conditions.add(provider_id, check)


def register_executor(provider_id, check):
    _executors.add(provider_id, check)


def register_global_profile(profile):
    _global_profiles.add(profile["name"], profile)


def global_profiles():
    return [_global_profiles[name] for name in _global_profiles]


def _name(item, path, missing):
    name = as_str(item.get("name") or "", at(path, "name"))
    if not name:
        raise RepresentationError(at(path, "name"), missing)
    return name


def _configuration(item, path):
    config = item.get("configuration")
    return as_dict(config, at(path, "configuration")) if config is not None else {}


def parse_profiles(value, path=""):
    """``{"profiles": [...]}`` checked: names unique and not a global profile's, every executor one
    this server runs with a configuration it accepts (Keycloak's refusals, with what they are
    about). Returns the normalized document."""
    profiles = as_list(as_dict(value, path).get("profiles") or [], at(path, "profiles"))
    out, seen = [], set()
    for i, profile in enumerate(profiles):
        p_path = at(path, f"profiles[{i}]")
        profile = as_dict(profile, p_path)
        name = _name(profile, p_path, "client profile without its name not allowed.")
        if name in seen:
            raise RepresentationError(at(p_path, "name"), f"proposed client profile name duplicated: {name!r}")
        if name in _global_profiles:
            raise RepresentationError(at(p_path, "name"), "Proposed profile name duplicated as the name of some "
                                                          f"global profile: {name!r}")
        seen.add(name)
        executors = _components(profile, p_path, "executor", _executors, (
            "proposed client profile contains the executor, which does not have valid provider, or has "
            "invalid configuration: {!r} is not an executor of this server (it has {})"))
        entry = {"name": name, "executors": executors}
        if profile.get("description"):
            entry["description"] = as_str(profile["description"], at(p_path, "description"))
        out.append(entry)
    return {"profiles": out}


def _components(owner, path, kind, registry, refusal):
    """The ``<kind>s`` of a profile or policy: each names a provider of ``registry`` (else refused
    with ``refusal``), whose check parses its configuration."""
    out = []
    for j, item in enumerate(as_list(owner.get(kind + "s") or [], at(path, kind + "s"))):
        item_path = at(path, f"{kind}s[{j}]")
        item = as_dict(item, item_path)
        provider = as_str(item.get(kind) or "", at(item_path, kind))
        check = registry.get(provider)
        if check is None:
            raise RepresentationError(at(item_path, kind), refusal.format(provider, ", ".join(sorted(registry))))
        out.append({kind: provider, "configuration": check(_configuration(item, item_path), item_path)})
    return out


def parse_policies(value, path="", profile_names=()):
    """``{"policies": [...]}`` checked: names unique, every condition one this server evaluates,
    every profile named one of ``profile_names`` (the realm's) or a global one."""
    policies = as_list(as_dict(value, path).get("policies") or [], at(path, "policies"))
    known = set(profile_names) | set(_global_profiles)
    out, seen = [], set()
    for i, policy in enumerate(policies):
        p_path = at(path, f"policies[{i}]")
        policy = as_dict(policy, p_path)
        name = _name(policy, p_path, "proposed client policy name missing.")
        if name in seen:
            raise RepresentationError(at(p_path, "name"), f"proposed client policy name duplicated: {name!r}")
        seen.add(name)
        conditions = _components(policy, p_path, "condition", _conditions, (
            "the proposed client policy contains the condition with its invalid configuration: "
            "{!r} is not a condition of this server (it has {})"))
        profiles = []
        for j, profile in enumerate(as_list(policy.get("profiles") or [], at(p_path, "profiles"))):
            profile = as_str(profile, at(p_path, f"profiles[{j}]"))
            if profile not in known:
                raise RepresentationError(at(p_path, f"profiles[{j}]"),
                                          f"referring not existing client profile not allowed: {profile!r}")
            profiles.append(profile)
        entry = {"name": name, "enabled": as_bool(policy.get("enabled", False), at(p_path, "enabled")),
                 "conditions": conditions, "profiles": profiles}
        if policy.get("description"):
            entry["description"] = as_str(policy["description"], at(p_path, "description"))
        out.append(entry)
    return {"policies": out}


def _stored(attributes, key, empty):
    raw = (attributes or {}).get(key)
    return json.loads(raw) if raw else {empty: []}


def stored_policies(attributes):
    return _stored(attributes, POLICIES_ATTRIBUTE, "policies")


def stored_profiles(attributes):
    return _stored(attributes, PROFILES_ATTRIBUTE, "profiles")


def store(attributes, policies=None, profiles=None):
    """The realm attributes with these (already parsed) documents written in; an empty document
    removes its attribute."""
    out = dict(attributes or {})
    for key, doc, items in ((POLICIES_ATTRIBUTE, policies, "policies"), (PROFILES_ATTRIBUTE, profiles, "profiles")):
        if doc is None:
            continue
        if doc[items]:
            out[key] = json.dumps(doc, separators=(",", ":"))
        else:
            out.pop(key, None)
    return out


def plain_attributes(attributes):
    """The realm attributes without the two that hold the documents."""
    return {k: v for k, v in (attributes or {}).items() if k not in RESERVED_ATTRIBUTES}


def with_reserved(new_attributes, old_attributes):
    """Plain attributes written over a realm's: the stored documents kept, never replaced by a
    plain attribute of the same name."""
    kept = {k: v for k, v in (old_attributes or {}).items() if k in RESERVED_ATTRIBUTES}
    return {**plain_attributes(new_attributes), **kept}


def check_profiles_in_use(policies, profiles, path="profiles"):
    """Profiles replaced under stored policies: each profile a policy names must remain."""
    known = {p["name"] for p in profiles["profiles"]} | set(_global_profiles)
    for policy in policies["policies"]:
        for name in policy["profiles"]:
            if name not in known:
                raise RepresentationError(path, f"client profile {name!r} is used by client policy "
                                                f"{policy['name']!r}")


def parse_sections(data, current_attributes=None):
    """The ``clientProfiles`` and ``clientPolicies`` of a realm representation (each None when
    absent), checked against each other and, for the one absent, against ``current_attributes``
    (the realm's stored documents)."""
    profiles = parse_profiles(data["clientProfiles"], "clientProfiles") \
        if data.get("clientProfiles") is not None else None
    names = [p["name"] for p in (profiles or stored_profiles(current_attributes))["profiles"]]
    policies = None
    if data.get("clientPolicies") is not None:
        policies = parse_policies(data["clientPolicies"], "clientPolicies", names)
    elif profiles is not None:
        check_profiles_in_use(stored_policies(current_attributes), profiles, "clientProfiles")
    return policies, profiles


# Who checks a client being written by the Admin API (a protocol's policies): check(realm, client
# unsaved, created, authenticator_given) -> None, or (error code, description) to refuse it with.
_client_write_checks = Registry("client write checks")


def register_client_write_check(name, check):
    _client_write_checks.add(name, check)


def client_write_refusal(realm, client, *, created, authenticator_given):
    """Run the registered checks over ``client`` (which they may auto-configure); the first
    refusal, or None."""
    for check in _client_write_checks.by_key():
        refusal = check(realm, client, created=created, authenticator_given=authenticator_given)
        if refusal:
            return refusal
    return None
