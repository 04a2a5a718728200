from django.apps import AppConfig


class IdpConfig(AppConfig):
    name = "idp"
    verbose_name = "Identity platform"
