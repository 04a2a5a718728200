"""``/admin/realms/{realm}/attack-detection/brute-force/users[/{id}]`` (Keycloak's
AttackDetectionResource): a user's login-failure record (``view-users``), clearing it or every
user's (``manage-users``), from ``realms.signin.bruteforce``."""
from rest_framework import status
from rest_framework.response import Response

from ..audit import admin_events
from ..models import User
from ..signin import bruteforce
from .views import RealmResource


class UserLoginFailure(RealmResource):
    required_role = {"GET": "view-users", "DELETE": "manage-users"}

    def get(self, request, realm, user_id):
        """Keycloak's map; an unknown user or a realm without brute-force protection has the
        empty record (not a 404, as in Keycloak)."""
        data = {"disabled": False, "numFailures": 0, "numTemporaryLockouts": 0, "lastFailure": 0,
                "lastIPFailure": "n/a"}
        user = self.row(User, user_id)
        if user is None or not self.realm.brute_force_protected:
            return Response(data)
        record = bruteforce.status(self.realm, user)
        if not record["failures"] and not record["last_failure"]:
            return Response(data)
        return Response({"disabled": bruteforce.is_locked(self.realm, user), "numFailures": record["failures"],
                         "numTemporaryLockouts": record["temporary_lockouts"],
                         "lastFailure": record["last_failure"], "lastIPFailure": record["last_ip"]})

    def delete(self, request, realm, user_id):
        user = self.row(User, user_id)
        if user is not None:
            admin_events.record(self.realm, "DELETE", "USER_LOGIN_FAILURE",
                                f"attack-detection/brute-force/users/{user.pk}", auth=self.auth_details())
            bruteforce.clear(self.realm, user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class AllLoginFailures(RealmResource):
    required_role = {"DELETE": "manage-users"}

    def delete(self, request, realm):
        admin_events.record(self.realm, "DELETE", "USER_LOGIN_FAILURE", "attack-detection/brute-force/users",
                            auth=self.auth_details())
        bruteforce.clear_all(self.realm)
        return Response(status=status.HTTP_204_NO_CONTENT)
