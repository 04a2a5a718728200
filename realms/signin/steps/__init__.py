"""The sign-in steps this service ships, one module each; ``BUILTIN`` is what
RealmsConfig.ready registers. Later steps (the identity-provider redirector and the
organization steps of ``realms.brokering``, Kerberos) register themselves the same way."""
from .conditions import (
    CredentialCondition,
    LevelOfAuthenticationCondition,
    UserAttributeCondition,
    UserConfiguredCondition,
    UserRoleCondition,
)
from .cookie import CookieAuthenticator
from .direct_grant import ValidatePassword, ValidateUsername
from .otp import OtpForm, RecoveryCodeForm, ValidateOtp
from .registration import RegistrationPage
from .reset_credentials import ChooseUser, ResetOtp, ResetPassword, SendEmail
from .username_password import UsernamePasswordForm
from .webauthn import WebAuthnAuthenticator, WebAuthnPasswordlessAuthenticator

BUILTIN = (CookieAuthenticator, UsernamePasswordForm, UserConfiguredCondition, ValidateUsername, ValidatePassword,
           OtpForm, ValidateOtp, RecoveryCodeForm, LevelOfAuthenticationCondition, UserRoleCondition,
           UserAttributeCondition, RegistrationPage, ChooseUser, SendEmail, ResetPassword, ResetOtp,
           CredentialCondition, WebAuthnAuthenticator, WebAuthnPasswordlessAuthenticator)
