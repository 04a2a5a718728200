"""The one registry type of the extension points: entries by key, a class registered as one
instance under its own key, listings by key, and every keyed extension point of the apps is one."""
from realms.registry import Registry


class Step:
    provider_id = "b-step"


def test_a_class_is_registered_as_one_instance_under_its_own_key():
    steps = Registry("steps")
    assert steps.add_instance(Step, "provider_id") is Step  # usable as a class decorator
    assert isinstance(steps["b-step"], Step)
    other = Step()
    other.provider_id = "a-step"
    steps.add_instance(other, "provider_id")
    assert steps["a-step"] is other
    assert steps.by_key() == [other, steps["b-step"]]
    replacement = Step()
    steps.add("b-step", replacement)  # a later registration replaces (a test's stand-in)
    assert steps["b-step"] is replacement and len(steps) == 2
    assert repr(steps) == "<Registry steps: a-step, b-step>"


def test_every_keyed_extension_point_is_a_registry():
    from oidc import mappers
    from realms import credentials
    from realms.signin import engine, flows
    from realms.sso import sessions
    from realms.users import actions, storage
    from webhooks import dispatch

    points = [credentials._types, flows._authenticators, actions._required_actions, engine._protocols,
              sessions._frontchannel_logout, storage._factories, storage._validators, storage._secrets,
              mappers.REGISTRY, dispatch._jobs]
    assert all(isinstance(p, Registry) for p in points)
    # Filled from the apps' ready(): the built-ins are there.
    assert {"password", "otp"} <= set(credentials._types) and "auth-username-password-form" in flows._authenticators
    assert "ldap" in storage._factories and "oidc-audience-mapper" in mappers.REGISTRY
    assert {"openid-connect", "saml", "login-actions"} <= set(engine._protocols)
