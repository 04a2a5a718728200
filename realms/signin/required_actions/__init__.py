"""Required actions this service ships, one module each; ``BUILTIN`` is what RealmsConfig.ready
registers. Others (the WebAuthn ones ...) register the same way from the apps that implement
them; until then a user who must do one cannot sign in (``realms.signin.flows``)."""
from .configure_totp import ConfigureTotp
from .delete_account import DeleteAccount
from .delete_credential import DeleteCredential
from .recovery_codes import ConfigureRecoveryCodes
from .terms_and_conditions import TermsAndConditions
from .update_email import UpdateEmail
from .update_password import UpdatePassword
from .update_profile import UpdateProfile
from .update_user_locale import UpdateUserLocale
from .verify_email import VerifyEmail
from .verify_profile import VerifyProfile
from .webauthn_register import WebAuthnRegister, WebAuthnRegisterPasswordless

BUILTIN = (UpdatePassword, ConfigureTotp, ConfigureRecoveryCodes, UpdateProfile, TermsAndConditions,
           DeleteCredential, VerifyEmail, WebAuthnRegister, WebAuthnRegisterPasswordless, UpdateEmail,
           UpdateUserLocale, DeleteAccount, VerifyProfile)
