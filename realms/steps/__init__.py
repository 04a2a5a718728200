"""The sign-in steps this service ships, one module each; ``BUILTIN`` is what
RealmsConfig.ready registers. Later steps (the identity-provider redirector,
Kerberos) register themselves the same way from their own apps."""
from .conditions import CredentialCondition, LevelOfAuthenticationCondition, UserConfiguredCondition
from .cookie import CookieAuthenticator
from .direct_grant import ValidatePassword, ValidateUsername
from .otp import OtpForm, RecoveryCodeForm, ValidateOtp
from .username_password import UsernamePasswordForm
from .webauthn import WebAuthnAuthenticator, WebAuthnPasswordlessAuthenticator

BUILTIN = (CookieAuthenticator, UsernamePasswordForm, UserConfiguredCondition, ValidateUsername, ValidatePassword,
           OtpForm, ValidateOtp, RecoveryCodeForm, LevelOfAuthenticationCondition, CredentialCondition,
           WebAuthnAuthenticator, WebAuthnPasswordlessAuthenticator)
