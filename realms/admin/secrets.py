"""A console form never shows a stored secret: the realm's SMTP password is shown as Keycloak's
mask, and a form posted back with the mask keeps the stored password (Keycloak's console does
the same with ``**********``). A new password replaces it; an empty one clears it."""
from django import forms

MASK = "**********"


class SmtpPasswordMaskedForm(forms.ModelForm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        smtp = self.initial.get("smtp_server")
        if isinstance(smtp, dict) and smtp.get("password"):
            self.initial["smtp_server"] = {**smtp, "password": MASK}

    def clean_smtp_server(self):
        value = self.cleaned_data.get("smtp_server")
        if isinstance(value, dict) and value.get("password") == MASK:
            stored = (self.instance.smtp_server or {}) if self.instance.pk else {}
            value = {**value, "password": stored.get("password", "")}
        return value
