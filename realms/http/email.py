"""E-mail to a realm's users through the realm's own SMTP server (``smtpServer`` in the realm
representation, as Keycloak keeps it: host, port, from, fromDisplayName, replyTo,
replyToDisplayName, envelopeFrom, ssl, starttls, auth, user, password).

A message is rendered from the realm's e-mail theme (``templates/<email theme>/email/html/<name>.html``
and ``text/<name>.txt``, falling back to ``v2`` file by file), subject and texts from the message
bundle in the user's locale, and handed over after the transaction commits: to a Celery task that
retries while the SMTP server is unreachable (production), or sent at once in this process (dev
mode, ``IDP_EMAIL_IN_PROCESS``). The task is given the realm's id, never its SMTP password."""
import html
import logging
import re
import smtplib
from email.utils import formataddr

from celery import current_app
from django.core.mail import EmailMultiAlternatives
from django.core.mail.backends.smtp import EmailBackend
from django.db import transaction
from django.template.loader import select_template
from django.utils.safestring import mark_safe

from .. import background
from ..errors import RealmsError
from . import messages, outbound

logger = logging.getLogger("idp.email")

DEFAULT_THEME = "v2"
TASK = "realms.send_email"  # realms.tasks.send_email
_TRUE = ("true", "1", True)
# Errors worth another try later: the server is down, refuses for now, or the network failed.
# A host the outbound policy refuses (outbound.TargetRefused) is not one: it is no retry.
TRANSIENT = (OSError, smtplib.SMTPException)


class NotConfigured(RealmsError):
    """The realm has no SMTP server (Keycloak answers "Failed to send email" too)."""


def configured(realm):
    return bool((realm.smtp_server or {}).get("host"))


class _Checked:
    """smtplib's socket goes to an address ``outbound.check_host`` allowed (the SSRF policy of
    every outbound URL a realm admin sets, decision 0118); ``self._host`` stays the configured
    name, so SMTP_SSL and STARTTLS send it as SNI and verify the certificate against it."""

    def _get_socket(self, host, port, timeout):
        address = outbound.check_host(host, port, "connecting to SMTP server")[0]
        return super()._get_socket(address, port, timeout)


class CheckedSMTP(_Checked, smtplib.SMTP):
    pass


class CheckedSMTP_SSL(_Checked, smtplib.SMTP_SSL):  # noqa: N801 (smtplib's name)
    pass


class CheckedBackend(EmailBackend):
    """Django's SMTP backend opening its connection through ``CheckedSMTP``/``CheckedSMTP_SSL``;
    raises outbound.TargetRefused when the host's addresses are not allowed."""

    @property
    def connection_class(self):
        return CheckedSMTP_SSL if self.use_ssl else CheckedSMTP


def connection(smtp, timeout=10):
    auth = smtp.get("auth") in _TRUE
    return CheckedBackend(
        host=smtp["host"], port=int(smtp.get("port") or (465 if smtp.get("ssl") in _TRUE else 25)),
        username=(smtp.get("user") or None) if auth else None,
        password=(smtp.get("password") or None) if auth else None,
        use_tls=smtp.get("starttls") in _TRUE, use_ssl=smtp.get("ssl") in _TRUE, timeout=timeout)


def build(smtp, to, subject, text_body, html_body):
    """The message as Keycloak's DefaultEmailSenderProvider composes it: From with its display
    name, Reply-To when set, and the envelope sender (``envelopeFrom``) when it differs."""
    if not smtp.get("from"):
        raise NotConfigured("the realm's SMTP settings have no from address")
    headers = {"From": formataddr((smtp.get("fromDisplayName") or "", smtp["from"]))}
    if smtp.get("replyTo"):
        headers["Reply-To"] = formataddr((smtp.get("replyToDisplayName") or "", smtp["replyTo"]))
    message = EmailMultiAlternatives(subject=subject, body=text_body, to=[to], headers=headers,
                                     from_email=smtp.get("envelopeFrom") or smtp["from"])
    if html_body:
        message.attach_alternative(html_body, "text/html")
    return message


def send_now(smtp, to, subject, text_body, html_body):
    """Send through ``smtp`` at once; raises on failure (TRANSIENT for a later retry)."""
    if not smtp.get("host"):
        raise NotConfigured("the realm has no SMTP server")
    with connection(smtp) as conn:
        conn.send_messages([build(smtp, to, subject, text_body, html_body)])


class TestFailed(RealmsError):
    """The test e-mail could not be sent (the cause is logged, not shown)."""


def send_test(realm, smtp, admin):
    """Keycloak's "Test connection": the ``email-test`` message through ``smtp`` to ``admin``
    (the Admin API's ``testSMTPConnection`` and the console's button)."""
    if not admin.email:
        raise TestFailed("Logged in user does not have an e-mail.")
    subject, text_body, html_body = render(realm, user_locale(realm, admin), "email-test", "emailTestSubject")
    try:
        send_now(smtp, admin.email, subject, text_body, html_body)
    except outbound.TargetRefused as exc:
        logger.warning("realm %s: SMTP test refused: %s", realm.name, exc)
        raise TestFailed(f"Failed to send email: SMTP server refused by the outbound policy: {exc}") from None
    except (NotConfigured, ValueError, *TRANSIENT) as exc:
        logger.warning("realm %s: SMTP test failed: %s", realm.name, exc)
        raise TestFailed("Failed to send email") from None


# Rendering ------------------------------------------------------------------------------------

_CHOICE = re.compile(r"\{0,choice,([^}]*)\}")


def _choice(pattern, n):
    """Java's ChoiceFormat as Keycloak's bundles use it (``0#minutes|1#minute|1<minutes``)."""
    chosen = ""
    for part in pattern.split("|"):
        for sep in ("#", "<"):
            limit, found, value = part.partition(sep)
            if found:
                if (sep == "#" and n >= float(limit)) or (sep == "<" and n > float(limit)):
                    chosen = value
                break
    return chosen


def expiration_text(realm, locale, seconds):
    """Keycloak's linkExpirationFormatter: the largest whole unit ("12 hours", "5 minutes")."""
    for unit, size in (("Days", 86400), ("Hours", 3600), ("Minutes", 60), ("Seconds", 1)):
        if seconds >= size and (seconds % size == 0 or unit == "Seconds"):
            n = seconds // size
            word = messages.text(realm, locale, f"linkExpirationFormatter.timePeriodUnit{unit}",
                                 theme=email_theme(realm))
            word = _CHOICE.sub(lambda m, n=n: _choice(m.group(1), n), word)
            return f"{n} {word}"
    return f"{seconds}"


def email_theme(realm):
    return realm.email_theme or DEFAULT_THEME


def user_locale(realm, user):
    """The user's ``locale`` attribute when the realm supports it, else the realm's default."""
    wanted = (user.attributes or {}).get("locale") if user is not None else None
    wanted = wanted[0] if isinstance(wanted, list) and wanted else wanted
    if wanted and realm.internationalization_enabled and wanted in (realm.supported_locales or ()):
        return wanted
    return realm.default_locale or messages.FALLBACK_LOCALE


def render(realm, locale, name, subject_key, subject_args=(), body_args=(), context=None, body_key=None):
    """(subject, text, html) of the e-mail template ``name``. ``body_args`` fill the bundle's
    ``<x>Body`` and ``<x>BodyHtml`` texts (escaped in the HTML one, which is itself trusted
    theme markup, as Keycloak's kcSanitize lets through)."""
    theme = email_theme(realm)

    def msg(key, *args):
        return messages.text(realm, locale, key, *args, theme=theme)

    base = {"realm": realm, "realm_name": realm.display_name or realm.name, "lang": locale, **(context or {})}

    def template(kind, ext):
        names = [f"{t}/email/{kind}/{name}.{ext}" for t in dict.fromkeys((theme, DEFAULT_THEME))]
        return select_template(names)

    body_key = body_key or _BODY_KEYS[name]
    text_body = template("text", "txt").render({**base, "body": msg(body_key, *body_args)})
    html_body = template("html", "html").render({
        **base, "body": mark_safe(msg(f"{body_key}Html", *(html.escape(str(a)) for a in body_args)))})
    return msg(subject_key, *subject_args), text_body, html_body


# Keycloak's e-mail templates and the bundle key of each one's body.
_BODY_KEYS = {
    "email-verification": "emailVerificationBody",
    "password-reset": "passwordResetBody",
    "executeActions": "executeActionsBody",
    "email-update-confirmation": "emailUpdateConfirmationBody",
    "email-test": "emailTestBody",
    "org-invite": "orgInviteBody",  # orgInviteBodyPersonalized when the names are known
}


# Sending --------------------------------------------------------------------------------------

def send_to_user(realm, user, name, subject_key, subject_args=(), body_args=(), context=None, body_key=None, *,
                 to=None, locale=None):
    """Render ``name`` for ``user`` and send it once the current transaction commits: to ``to``
    (an address being confirmed) or the user's address, in ``locale`` (the one a sign-in page
    resolved) or the user's. Raises NotConfigured when the realm has no SMTP server or there is
    no address."""
    if not configured(realm):
        raise NotConfigured("the realm has no SMTP server")
    to = to or user.email
    if not to:
        raise NotConfigured("the user has no e-mail address")
    locale = locale or user_locale(realm, user)
    subject, text_body, html_body = render(realm, locale, name, subject_key, subject_args, body_args, context,
                                           body_key)
    realm_id, smtp = realm.pk, dict(realm.smtp_server)
    transaction.on_commit(lambda: dispatch(realm_id, smtp, to, subject, text_body, html_body))


def dispatch(realm_id, smtp, to, subject, text_body, html_body):
    """In dev mode a thread of this process sends it (the answer to the browser never waits for
    the SMTP server, so its timing does not tell whether a message was sent); otherwise the
    Celery task, which reads the SMTP settings itself."""
    background.start("IDP_EMAIL_IN_PROCESS", "email", _send_logged, (realm_id, smtp, to, subject, text_body, html_body),
                     lambda realm_id, smtp, *message: current_app.send_task(TASK, args=(realm_id, *message)))


def _send_logged(realm_id, smtp, to, subject, text_body, html_body):
    try:
        send_now(smtp, to, subject, text_body, html_body)
    except (NotConfigured, outbound.TargetRefused, *TRANSIENT) as exc:
        logger.warning("e-mail to a user of realm %s not sent: %s", realm_id, exc)


def deliver(realm_id, to, subject, text_body, html_body):
    """The Celery task's work: the realm's current SMTP settings, then send."""
    from ..models import Realm

    realm = Realm.objects.filter(pk=realm_id).only("smtp_server").first()
    if realm is None:
        return
    send_now(realm.smtp_server or {}, to, subject, text_body, html_body)
