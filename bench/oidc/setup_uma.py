"""Create (or reuse) the UMA benchmark realm ``bench-uma``: ``bench-app`` is a resource server
whose resource ``Doc`` (scope ``read``) is covered by one scope permission applying five
policies (role, group, user, client, time; UNANIMOUS, so all five are evaluated each time)."""
import os
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.oidc.settings")
django.setup()

from bench.oidc.users import CLIENT, PASSWORD, SECRET, USER  # noqa: E402
from realms.models import Realm  # noqa: E402
from realms.representation import import_realm  # noqa: E402

REALM = "bench-uma"


def policy(name, kind, config):
    return {"name": name, "type": kind, "config": config}


if not Realm.objects.filter(name=REALM).exists():
    import_realm({
        "realm": REALM,
        "roles": {"realm": [{"name": "reader"}]},
        "groups": [{"name": "staff", "path": "/staff"}],
        "clients": [{
            "clientId": CLIENT, "secret": SECRET, "standardFlowEnabled": False, "serviceAccountsEnabled": True,
            "directAccessGrantsEnabled": True,
            "authorizationSettings": {
                "resources": [{"name": "Doc", "scopes": [{"name": "read"}]}],
                "policies": [
                    policy("readers", "role", {"roles": '[{"id":"reader"}]'}),
                    policy("staff", "group", {"groups": '[{"path":"/staff"}]'}),
                    policy("the user", "user", {"users": f'["{USER}"]'}),
                    policy("the app", "client", {"clients": f'["{CLIENT}"]'}),
                    policy("this century", "time", {"year": "2000", "yearEnd": "2099"}),
                    policy("read docs", "scope", {"resources": '["Doc"]', "scopes": '["read"]',
                                                  "applyPolicies": '["readers","staff","the user","the app",'
                                                                   '"this century"]'}),
                ],
            },
        }],
        "users": [{"username": USER, "enabled": True, "credentials": [{"type": "password", "value": PASSWORD}],
                   "realmRoles": [f"default-roles-{REALM}", "reader"], "groups": ["/staff"]}],
    })
sys.stdout.write("ok\n")
