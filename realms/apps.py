from django.apps import AppConfig


class RealmsConfig(AppConfig):
    name = "realms"
    verbose_name = "Realms"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.db.models.signals import post_migrate

        from . import purges
        from .admin_api import resources, routes
        from .administration import admin_permissions, console_auth
        from .brokering import broker, first_login, hardcoded_mappers, login_page, organization_steps
        from .credentials import register_credential_type
        from .credentials.otp import Otp
        from .credentials.password import Password
        from .credentials.recovery_codes import RecoveryCodes
        from .credentials.webauthn import WebAuthn, WebAuthnPasswordless
        from .data import keys, realm_cache
        from .representation import resource_server
        from .representation.services import ensure_master_realm
        from .signin import required_actions, steps
        from .signin.engine import register_login_actions
        from .signin.flows import register_authenticator
        from .sso import sessions
        from .users.actions import register_required_action

        for step in steps.BUILTIN:
            register_authenticator(step)
        for action in required_actions.BUILTIN:
            register_required_action(action)
        register_login_actions()
        console_auth.register()
        broker.register()
        login_page.register()
        hardcoded_mappers.register()
        organization_steps.register()
        first_login.register()
        for kind in (Password, Otp, RecoveryCodes, WebAuthn, WebAuthnPasswordless):
            register_credential_type(kind)

        post_migrate.connect(ensure_master_realm, sender=self, dispatch_uid="realms-master-realm")
        keys.connect_signals()
        sessions.connect_signals()
        realm_cache.connect_signals()
        admin_permissions.connect_signals()
        resource_server.connect_signals()
        resources.register(*routes.urlpatterns)
        purges.register_own()
        register_sealed_columns()


def register_sealed_columns():
    """The columns ``manage.py rotate_secret_key`` re-encrypts (realms.data.sealed)."""
    from .data import sealed
    from .models import Client, Component, Credential, FederatedIdentity, IdentityProvider, Realm, RealmKey
    from .users import storage

    sealed.register("client secrets", sealed.text_column(Client, "secret_encrypted"))
    sealed.register("realm keys", sealed.text_column(RealmKey, "private_key_encrypted"))
    sealed.register("OTP credentials", sealed.text_column(Credential, "secret_data", type=Credential.OTP))
    sealed.register("identity provider tokens", sealed.text_column(FederatedIdentity, "token"))
    sealed.register("realm SMTP settings", sealed.map_column(Realm, "smtp_server"))
    sealed.register("identity provider settings", sealed.map_column(IdentityProvider, "config"))
    sealed.register("component settings",
                    lambda: sealed.reseal_rows(Component.objects.all(), "config", storage.reseal_config))
