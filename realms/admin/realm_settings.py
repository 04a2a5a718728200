"""The realm's settings kept as JSON (``smtpServer``, the OTP and WebAuthn policies,
``browserSecurityHeaders``, ``localizationTexts``) as form controls with Keycloak's names,
choices and defaults, each validated with a message that says what is wrong."""
import re

from django import forms
from django.core.validators import MaxValueValidator, MinValueValidator

from ..audit.events import USER_EVENT_TYPES
from ..credentials import password_policy, webauthn
from ..http import messages as bundles
from ..http import security_headers
from .base import LinesField
from .keyed import Key, SecretKey
from .widgets import RowsWidget

NOT_SPECIFIED = "not specified"


def _text(label, **kwargs):
    return forms.CharField(label=label, required=False, **kwargs)


def _flag(label, **kwargs):
    return forms.BooleanField(label=label, required=False, **kwargs)


def _number(label, low, high, initial, **kwargs):
    return forms.IntegerField(label=label, min_value=low, max_value=high, initial=initial, **kwargs)


def _choice(label, choices, initial, coerce=str):
    return forms.TypedChoiceField(label=label, choices=[(c, c) for c in choices], initial=initial, coerce=coerce)


# smtpServer: Keycloak keeps every value as a string and omits what is not set.
SMTP = {
    "smtp_host": Key("smtp_server", "host", _text("Host"), as_string=True, omit_empty=True),
    "smtp_port": Key("smtp_server", "port", forms.IntegerField(
        label="Port", required=False, validators=[MinValueValidator(1), MaxValueValidator(65535)],
        help_text="Empty: 25, or 465 with SSL."), as_string=True, omit_empty=True),
    "smtp_from": Key("smtp_server", "from", forms.EmailField(label="From", required=False), as_string=True,
                     omit_empty=True),
    "smtp_from_display_name": Key("smtp_server", "fromDisplayName", _text("From display name"),
                                  as_string=True, omit_empty=True),
    "smtp_reply_to": Key("smtp_server", "replyTo", forms.EmailField(label="Reply to", required=False),
                         as_string=True, omit_empty=True),
    "smtp_reply_to_display_name": Key("smtp_server", "replyToDisplayName", _text("Reply to display name"),
                                      as_string=True, omit_empty=True),
    "smtp_envelope_from": Key("smtp_server", "envelopeFrom", forms.EmailField(label="Envelope from", required=False),
                              as_string=True, omit_empty=True),
    "smtp_ssl": Key("smtp_server", "ssl", _flag("Enable SSL"), as_string=True),
    "smtp_starttls": Key("smtp_server", "starttls", _flag("Enable StartTLS"), as_string=True),
    "smtp_auth": Key("smtp_server", "auth", _flag("Enable authentication"), as_string=True),
    "smtp_user": Key("smtp_server", "user", _text("Username"), as_string=True, omit_empty=True),
    "smtp_password": SecretKey("smtp_server", "password", _text(
        "Password", widget=forms.PasswordInput(render_value=True),
        help_text="Shown masked; leave the mask to keep the stored password."), omit_empty=True),
}

OTP = {
    "otp_type": Key("otp_policy", "otpPolicyType", forms.ChoiceField(
        label="OTP type", choices=[("totp", "Time based"), ("hotp", "Counter based")], initial="totp")),
    "otp_algorithm": Key("otp_policy", "otpPolicyAlgorithm", forms.ChoiceField(
        label="OTP hash algorithm", initial="HmacSHA1",
        choices=[("HmacSHA1", "SHA1"), ("HmacSHA256", "SHA256"), ("HmacSHA512", "SHA512")])),
    "otp_digits": Key("otp_policy", "otpPolicyDigits", _choice("Number of digits", (6, 8), 6, int)),
    "otp_look_ahead": Key("otp_policy", "otpPolicyLookAheadWindow", _number(
        "Look around", 0, 10, 1, help_text="Codes before and after the current one that are accepted too.")),
    "otp_period": Key("otp_policy", "otpPolicyPeriod", _number(
        "OTP token period (s)", 1, 120, 30, help_text="Time based codes only.")),
    "otp_initial_counter": Key("otp_policy", "otpPolicyInitialCounter", _number(
        "Initial counter", 0, 2**31 - 1, 0, help_text="Counter based codes only.")),
    "otp_code_reusable": Key("otp_policy", "otpPolicyCodeReusable", _flag(
        "Reusable token", help_text="Off: a code is refused once used within its window.")),
}

WEBAUTHN_ALGORITHMS = tuple(webauthn.ALGORITHMS)


def _webauthn(prefix, key_prefix, passwordless):
    def key(name):
        return f"{key_prefix}{name}"

    return {
        f"{prefix}_rp_entity_name": Key("webauthn_policy", key("RpEntityName"), forms.CharField(
            label="Relying party entity name", initial="keycloak")),
        f"{prefix}_signature_algorithms": Key("webauthn_policy", key("SignatureAlgorithms"), forms.MultipleChoiceField(
            label="Signature algorithms", required=False, choices=[(a, a) for a in WEBAUTHN_ALGORITHMS],
            initial=["ES256", "RS256"], widget=forms.CheckboxSelectMultiple)),
        f"{prefix}_rp_id": Key("webauthn_policy", key("RpId"), _text(
            "Relying party ID", help_text="A domain; empty: the server's host name.")),
        f"{prefix}_attestation": Key("webauthn_policy", key("AttestationConveyancePreference"), _choice(
            "Attestation conveyance preference", (NOT_SPECIFIED, "none", "indirect", "direct"), NOT_SPECIFIED)),
        f"{prefix}_attachment": Key("webauthn_policy", key("AuthenticatorAttachment"), _choice(
            "Authenticator attachment", (NOT_SPECIFIED, "platform", "cross-platform"), NOT_SPECIFIED)),
        f"{prefix}_resident_key": Key("webauthn_policy", key("RequireResidentKey"), _choice(
            "Require discoverable credential", (NOT_SPECIFIED, "Yes", "No"),
            "Yes" if passwordless else NOT_SPECIFIED)),
        f"{prefix}_user_verification": Key("webauthn_policy", key("UserVerificationRequirement"), _choice(
            "User verification requirement", (NOT_SPECIFIED, "required", "preferred", "discouraged"),
            "required" if passwordless else NOT_SPECIFIED)),
        f"{prefix}_timeout": Key("webauthn_policy", key("CreateTimeout"), _number(
            "Timeout (s)", 0, 31536, 0, help_text="0: the browser's default.")),
        f"{prefix}_avoid_same": Key("webauthn_policy", key("AvoidSameAuthenticatorRegister"), _flag(
            "Avoid same authenticator registration")),
        f"{prefix}_aaguids": Key("webauthn_policy", key("AcceptableAaguids"), LinesField(
            label="Acceptable AAGUIDs", required=False, help_text="One per line; empty: any authenticator.")),
        f"{prefix}_extra_origins": Key("webauthn_policy", key("ExtraOrigins"), LinesField(
            label="Extra origins", required=False, help_text="One per line, e.g. android:apk-key-hash:...")),
    }


WEBAUTHN = {**_webauthn("webauthn", "webAuthnPolicy", False),
            **_webauthn("passwordless", "webAuthnPolicyPasswordless", True)}

# OAuth Client ID Metadata Documents (the client-id-metadata-document feature): realm attributes.
CIMD = {
    "cimd_permitted_domains": Key("attributes", "cimd-allow-permitted-domains", forms.CharField(
        label="Permitted domains", required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Hosts whose https URLs may be client ids (one per line; *.example.com for a domain). "
                  "Empty: none."), as_string=True, omit_empty=True),
    "cimd_consent_required": Key("attributes", "cimd-consent-required", forms.BooleanField(
        label="Consent required", required=False, initial=True,
        help_text="Users confirm each such client on a consent page before it gets tokens."), as_string=True),
}

# The Shared Signals transmitter (oidc.ssf, docs/ssf.md): realm attributes, as Keycloak's.
SSF = {
    "ssf_transmitter_enabled": Key("attributes", "ssf.transmitterEnabled", forms.BooleanField(
        label="SSF Transmitter", required=False,
        help_text="Publish .well-known/ssf-configuration; clients marked as SSF receivers manage streams of "
                  "security events (CAEP, RISC). Off: every SSF endpoint answers 404."), as_string=True),
    "ssf_default_subjects": Key("attributes", "ssf.defaultSubjects", forms.ChoiceField(
        label="SSF default subjects", choices=[("ALL", "ALL"), ("NONE", "NONE")], initial="ALL",
        help_text="Whom a stream covers before the receiver adds subjects: every user, or none."), as_string=True),
}

# Keycloak's CIBA policy (Authentication, Policies): realm attributes, strings as Keycloak stores them.
CIBA = {
    "ciba_delivery_mode": Key("attributes", "cibaBackchannelTokenDeliveryMode", forms.ChoiceField(
        label="Backchannel Token Delivery Mode", choices=[("poll", "poll"), ("ping", "ping")], initial="poll",
        help_text="How a client of the CIBA grant learns the user has answered: it polls the token "
                  "endpoint, or the server pings its notification endpoint."), as_string=True),
    "ciba_expires_in": Key("attributes", "cibaExpiresIn", _number(
        "Expires In (s)", 10, 600, 120, help_text="Lifetime of an authentication request (auth_req_id)."),
        as_string=True),
    "ciba_interval": Key("attributes", "cibaInterval", _number(
        "Interval (s)", 0, 600, 5, help_text="The least time between two polls of the token endpoint."),
        as_string=True),
    "ciba_user_hint": Key("attributes", "cibaAuthRequestedUserHint", forms.ChoiceField(
        label="Authentication Requested User Hint", choices=[("login_hint", "login_hint")],
        initial="login_hint", help_text="How the client names the user: login_hint, the username."),
        as_string=True),
}

_HEADER_LABELS = {
    "xFrameOptions": "X-Frame-Options", "contentSecurityPolicy": "Content-Security-Policy",
    "contentSecurityPolicyReportOnly": "Content-Security-Policy-Report-Only",
    "xContentTypeOptions": "X-Content-Type-Options", "xRobotsTag": "X-Robots-Tag",
    "strictTransportSecurity": "HTTP Strict Transport Security (HSTS)", "referrerPolicy": "Referrer-Policy",
}
HEADERS = {
    f"header_{key}": Key("browser_security_headers", key, _text(
        label, initial=security_headers.DEFAULTS[key], strip=True,
        help_text="Empty: the header is not sent." if key != "strictTransportSecurity"
        else "Sent over HTTPS only; empty: not sent."), as_string=True)
    for key, label in _HEADER_LABELS.items()
}
REFERRER_POLICIES = ("", "no-referrer", "no-referrer-when-downgrade", "origin", "origin-when-cross-origin",
                     "same-origin", "strict-origin", "strict-origin-when-cross-origin", "unsafe-url")


def validate_headers(cleaned):
    """{form field: message} for header values a browser would not understand."""
    problems = {}
    for name in HEADERS:
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in cleaned.get(name) or ""):
            problems[name] = "A header value cannot contain control characters or line breaks."
    frame = (cleaned.get("header_xFrameOptions") or "").upper()
    if frame and frame not in ("DENY", "SAMEORIGIN"):
        problems["header_xFrameOptions"] = "Use DENY, SAMEORIGIN, or leave it empty."
    if (cleaned.get("header_referrerPolicy") or "") not in REFERRER_POLICIES:
        problems["header_referrerPolicy"] = "Not a referrer policy; use one of: " + ", ".join(REFERRER_POLICIES[1:]) + "."
    if (cleaned.get("header_xContentTypeOptions") or "") not in ("", "nosniff"):
        problems["header_xContentTypeOptions"] = "Use nosniff, or leave it empty."
    hsts = cleaned.get("header_strictTransportSecurity") or ""
    if hsts and not re.match(r"^\s*max-age=\d+\s*(;|$)", hsts):
        problems["header_strictTransportSecurity"] = "Start with max-age=<seconds>, e.g. max-age=31536000; includeSubDomains."
    return problems


def validate_smtp(cleaned):
    problems = {}
    if cleaned.get("smtp_host") and not cleaned.get("smtp_from"):
        problems["smtp_from"] = "An e-mail needs a sender: give the From address."
    if cleaned.get("smtp_from") and not cleaned.get("smtp_host"):
        problems["smtp_host"] = "Give the SMTP server's host name."
    if cleaned.get("smtp_auth") and not cleaned.get("smtp_user"):
        problems["smtp_user"] = "Authentication needs a username."
    if cleaned.get("smtp_ssl") and cleaned.get("smtp_starttls"):
        problems["smtp_starttls"] = "Use either SSL (the connection starts encrypted) or StartTLS, not both."
    return problems


# Locales ---------------------------------------------------------------------------------------

LOCALE_TAG = re.compile(r"^[a-z]{2,3}([-_][A-Za-z0-9]{2,8})*$")


def locale_choices():
    return [(tag, tag) for tag in bundles.available_locales()]


class RealmTextsField(forms.Field):
    """The realm's ``localizationTexts`` ({locale: {key: text}}) edited as ``locale:key=text`` lines."""

    widget = forms.Textarea(attrs={"rows": 4, "cols": 80})

    def prepare_value(self, value):
        if isinstance(value, dict):
            return "\n".join(f"{loc}:{key}={text}" for loc, texts in sorted(value.items())
                             for key, text in sorted(texts.items()))
        return value or ""

    def to_python(self, value):
        if isinstance(value, dict):
            return value
        texts = {}
        for number, line in enumerate((value or "").splitlines(), 1):
            if not line.strip():
                continue
            head, eq, text = line.partition("=")
            locale, colon, key = head.strip().partition(":")
            if not (eq and colon and key.strip() and LOCALE_TAG.match(locale)):
                raise forms.ValidationError(
                    f"Line {number}: write locale:key=text, e.g. de:loginTitle=Anmelden bei {{0}}.")
            texts.setdefault(locale, {})[key.strip()] = text.strip()
        return texts


def event_type_choices():
    return [(t, t) for t in USER_EVENT_TYPES]


# Password policy -------------------------------------------------------------------------------

# Keycloak's console names of the policies this server enforces (realms.credentials.password_policy).
POLICY_LABELS = {
    "length": "Minimum length", "maxLength": "Maximum length", "digits": "Digits",
    "lowerCase": "Lowercase characters", "upperCase": "Uppercase characters", "specialChars": "Special characters",
    "notUsername": "Not username", "notEmail": "Not email", "notContainsUsername": "Not contains username",
    "regexPattern": "Regular expression", "passwordBlacklist": "Password blacklist",
    "passwordHistory": "Not recently used", "forceExpiredPasswordChange": "Expire password (days)",
    "hashAlgorithm": "Hashing algorithm", "hashIterations": "Hashing iterations",
    "maxAuthAge": "Maximum authentication age (s)",
}
# Policies whose value Keycloak's console writes as the placeholder "undefined" (none is read).
NO_VALUE = ("notUsername", "notEmail", "notContainsUsername")


def policy_default(name):
    """The value a policy takes when given none, shown in a new row ('' if it has none)."""
    if name in NO_VALUE:
        return ""
    try:
        value = password_policy.KINDS[name].parse(None)
    except password_policy.PolicyConfigError:
        return ""  # a pattern or a file name: the admin must give it
    return "" if value is None else str(value)


class PasswordPolicyWidget(RowsWidget):
    """Rows of (policy, value), posted as ``<name>-policy`` and ``<name>-value``; adding and removing
    rows are ``type="button"`` controls, so Enter saves the form."""

    template_name = "admin/console/widgets/password_policy.html"

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        context["widget"]["rows"] = [*(value or ()), ("", "")]
        context["widget"]["policies"] = [(key, label, policy_default(key), key in NO_VALUE)
                                         for key, label in POLICY_LABELS.items()]
        return context

    def value_from_datadict(self, data, files, name):
        if f"{name}-present" not in data:
            return None
        return list(zip(data.getlist(f"{name}-policy"), data.getlist(f"{name}-value"), strict=False))

    def value_omitted_from_data(self, data, files, name):
        return f"{name}-present" not in data


class PasswordPolicyField(forms.Field):
    """The realm's ``passwordPolicy`` string (``length(12) and notUsername(undefined)``) built from
    rows; the string is then checked by the policy's own parser (``RealmFormBase``)."""

    widget = PasswordPolicyWidget

    def prepare_value(self, value):
        if not isinstance(value, str):
            return value or []
        rows = []
        for part in value.split(" and "):
            name, paren, rest = part.strip().partition("(")
            if name.strip():
                given = rest[:-1] if paren and rest.endswith(")") else rest
                rows.append((name.strip(), "" if name.strip() in NO_VALUE else given))
        return rows

    def to_python(self, value):
        if isinstance(value, str) or value is None:
            return value or ""
        parts, seen = [], set()
        for number, (name, given) in enumerate(value, 1):
            given = given.strip()
            if not name:
                if given:
                    raise forms.ValidationError(f"Row {number}: choose the policy this value is for.")
                continue
            if name not in POLICY_LABELS:
                raise forms.ValidationError(f"Row {number}: {name} is not a password policy this server knows.")
            if name in seen:
                raise forms.ValidationError(f"{POLICY_LABELS[name]} is added twice; keep one.")
            seen.add(name)
            if " and " in given or ")" in given:
                raise forms.ValidationError(f"{POLICY_LABELS[name]}: a value cannot contain \" and \" or \")\".")
            parts.append(f"{name}(undefined)" if name in NO_VALUE else f"{name}({given})" if given else name)
        return " and ".join(parts)

    def has_changed(self, initial, data):
        try:
            return (initial or "") != self.to_python(data)
        except forms.ValidationError:
            return True
