"""Required actions this service ships, one module each; ``BUILTIN`` is what RealmsConfig.ready
registers. Others (VERIFY_EMAIL ...) register the same way from the apps that
implement them; until then a user who must do one cannot sign in (``realms.flows``)."""
from .configure_totp import ConfigureTotp
from .recovery_codes import ConfigureRecoveryCodes
from .update_password import UpdatePassword
from .webauthn_register import WebAuthnRegister, WebAuthnRegisterPasswordless

BUILTIN = (UpdatePassword, ConfigureTotp, ConfigureRecoveryCodes, WebAuthnRegister, WebAuthnRegisterPasswordless)
