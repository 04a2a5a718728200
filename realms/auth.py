"""Admin console sign-in: users of the master realm only, password checked like any sign-in."""
from django.contrib.auth.backends import BaseBackend

from .hashers import spend_check_time
from .models import User


class MasterRealmBackend(BaseBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if not username or password is None:
            return None
        user = User.objects.select_related("realm").filter(realm__name="master", username=username).first()
        if user is None:
            spend_check_time(password)
            return None
        if user.check_password(password) and user.enabled:
            return user
        return None

    def get_user(self, user_id):
        return User.objects.select_related("realm").filter(pk=user_id, realm__name="master").first()

    def has_perm(self, user_obj, perm, obj=None):
        return user_obj.is_staff

    def has_module_perms(self, user_obj, app_label):
        return user_obj.is_staff
