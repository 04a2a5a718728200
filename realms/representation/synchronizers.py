"""Keycloak's policy synchronizers for the resource servers' settings (``forget_removed``), applied
by ``resource_server.write`` before every change."""
import json

from django.db.models import Q

from ..authz.policies import UMA, config_list, find_client_scope, find_group, find_role
from ..models import Client, User

# Per subject policy type: the config key of its entries, and whether an entry still names an
# object of the realm (ids or the names an import gave, as ``resolve`` accepts them).
_SUBJECTS = {
    "user": ("users", lambda realm, ref: User.objects.filter(realm=realm).filter(Q(pk=ref) | Q(username=ref)).exists()),
    "client": ("clients", lambda realm, ref: Client.objects.filter(realm=realm).filter(
        Q(pk=ref) | Q(client_id=ref)).exists()),
    "group": ("groups", lambda realm, entry: find_group(realm, entry) is not None),
    "role": ("roles", lambda realm, entry: find_role(realm, entry.get("id", "")) is not None),
    "client-scope": ("clientScopes", lambda realm, entry: find_client_scope(realm, entry.get("id", "")) is not None),
}


def forget_removed(realm, settings):
    """Keycloak's policy synchronizers, applied when the settings are next written: an object
    removed from the realm leaves the policies naming it, and a policy left naming nothing goes
    (Keycloak deletes it: empty, it would decide on nothing); a removed user's resources and
    user-managed policies go with them; permissions forget the resources and policies gone."""
    owners = {r["owner"]["id"] for r in settings["resources"] if r.get("owner")}
    owners |= {p["owner"] for p in settings["policies"] if p.get("owner")}
    live = set(User.objects.filter(realm=realm, pk__in=owners).values_list("pk", flat=True)) if owners else set()
    gone_resources = {key for r in settings["resources"] if r.get("owner") and r["owner"]["id"] not in live
                      for key in (r["name"], r.get("_id"))}
    settings["resources"] = [r for r in settings["resources"] if not r.get("owner") or r["owner"]["id"] in live]
    gone_policies = set()
    for policy in list(settings["policies"]):
        subject = _SUBJECTS.get(policy["type"])
        if policy.get("owner") and policy["owner"] not in live:
            kept = []
        elif subject and subject[0] in policy["config"]:
            entries = config_list(policy, subject[0])
            kept = [e for e in entries if subject[1](realm, e)]
            if len(kept) == len(entries):
                continue
            policy["config"][subject[0]] = json.dumps(kept, separators=(",", ":"))
        else:
            continue
        if not kept:
            settings["policies"].remove(policy)
            gone_policies.add(policy["name"])
    for policy in list(settings["policies"]):
        for key, gone in (("resources", gone_resources), ("applyPolicies", gone_policies)):
            if gone and key in policy["config"]:
                names = config_list(policy, key)
                kept = [n for n in names if n not in gone]
                if len(kept) < len(names):
                    policy["config"][key] = json.dumps(kept, separators=(",", ":"))
                    # a resource permission or a user-managed one left with no resource names none
                    if key == "resources" and not kept and (policy["type"] == UMA or (
                            policy["type"] == "resource" and not policy["config"].get("defaultResourceType"))):
                        settings["policies"].remove(policy)
                        break
