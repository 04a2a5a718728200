from django.apps import AppConfig


class AmbassadorConfig(AppConfig):
    name = "ambassador"
    verbose_name = "Ambassador (outbound proxy)"
