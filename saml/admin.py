"""The admin console's SAML section: Keycloak's SAML client settings (signature and encryption,
name ID format, ACS and logout URLs, IdP-initiated SSO) edited as form fields and kept in the
client's attributes under Keycloak's keys, so an export carries them unchanged.

The realms app's client admin is extended, not copied: this subclass adds the section for SAML
clients and re-registers it (saml comes after realms in INSTALLED_APPS).
"""
from django import forms
from django.contrib import admin

from realms.admin import ClientAdmin, ClientForm
from realms.models import Client

from . import constants as c
from .clients import SamlClient
from .signatures import KEYCLOAK_ALGORITHMS, certificate_from_attribute

_CHECKBOXES = {
    "saml_server_signature": (c.ATTR_SERVER_SIGNATURE, "Sign documents"),
    "saml_assertion_signature": (c.ATTR_ASSERTION_SIGNATURE, "Sign assertions"),
    "saml_client_signature": (c.ATTR_CLIENT_SIGNATURE, "Client signature required"),
    "saml_encrypt": (c.ATTR_ENCRYPT, "Encrypt assertions"),
    "saml_force_post_binding": (c.ATTR_FORCE_POST_BINDING, "Force POST binding"),
    "saml_authnstatement": (c.ATTR_AUTHNSTATEMENT, "Include AuthnStatement"),
    "saml_force_name_id_format": (c.ATTR_FORCE_NAME_ID_FORMAT, "Force name ID format"),
}
_TEXTS = {
    "saml_acs_post": (c.ATTR_ACS_POST, "Assertion Consumer Service POST Binding URL"),
    "saml_acs_redirect": (c.ATTR_ACS_REDIRECT, "Assertion Consumer Service Redirect Binding URL"),
    "saml_slo_post": (c.ATTR_SLO_POST, "Logout Service POST Binding URL"),
    "saml_slo_redirect": (c.ATTR_SLO_REDIRECT, "Logout Service Redirect Binding URL"),
    "saml_slo_soap": (c.ATTR_SLO_SOAP, "Logout Service SOAP Binding URL"),
    "saml_idp_initiated_name": (c.ATTR_IDP_INITIATED_NAME, "IDP-Initiated SSO URL name"),
    "saml_idp_initiated_relay_state": (c.ATTR_IDP_INITIATED_RELAY_STATE, "IDP-Initiated SSO Relay State"),
}
_CERTIFICATES = {
    "saml_signing_certificate": (c.ATTR_SIGNING_CERTIFICATE, "Signing certificate (the SP's, base64 DER or PEM)"),
    "saml_encryption_certificate": (c.ATTR_ENCRYPTION_CERTIFICATE,
                                    "Encryption certificate (empty: the signing certificate)"),
}
CAPABILITY_FIELDS = [*_CHECKBOXES, "saml_name_id_format", "saml_signature_algorithm"]


def _declared_fields():
    fields = {
        # Not required: the fields are only on SAML clients' pages, yet every client's form has them.
        "saml_name_id_format": forms.ChoiceField(label="Name ID format", required=False,
                                                 choices=[(n, n) for n in c.NAMEID_FORMATS]),
        "saml_signature_algorithm": forms.ChoiceField(
            label="Signature algorithm", required=False, choices=[(n, n) for n in KEYCLOAK_ALGORITHMS],
            help_text="RSA_SHA1 also lets this client's SHA-1 signatures in; avoid it."),
    }
    for name, (_, label) in _CHECKBOXES.items():
        fields[name] = forms.BooleanField(label=label, required=False)
    for name, (_, label) in _TEXTS.items():
        fields[name] = forms.CharField(label=label, required=False, max_length=2048)
    for name, (_, label) in _CERTIFICATES.items():
        fields[name] = forms.CharField(label=label, required=False, widget=forms.Textarea(attrs={"rows": 3}))
    return fields


class _SamlClientFormBase(ClientForm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        saml = SamlClient(self.instance)
        attributes = saml.attributes
        for name, (key, _) in _CHECKBOXES.items():
            self.initial.setdefault(name, saml.flag(key))
        for name, (key, _) in {**_TEXTS, **_CERTIFICATES}.items():
            self.initial.setdefault(name, attributes.get(key, ""))
        self.initial.setdefault("saml_name_id_format", saml.name_id_format)
        self.initial.setdefault("saml_signature_algorithm",
                                attributes.get(c.ATTR_SIGNATURE_ALGORITHM) or "RSA_SHA256")

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("protocol") != c.PROTOCOL:
            return cleaned  # the section only applies to SAML clients
        attributes = dict(cleaned.get("attributes") or {})
        for name, (key, _) in _CERTIFICATES.items():
            text = (cleaned.get(name) or "").strip()
            value = text if text.startswith("-----BEGIN") else "".join(text.split())
            if value and certificate_from_attribute(value) is None:
                self.add_error(name, "Not an X.509 certificate.")
            attributes[key] = value
        for name, (key, _) in _CHECKBOXES.items():
            attributes[key] = "true" if cleaned.get(name) else "false"
        for name, (key, _) in _TEXTS.items():
            attributes[key] = (cleaned.get(name) or "").strip()
        attributes[c.ATTR_NAME_ID_FORMAT] = cleaned.get("saml_name_id_format") or "username"
        attributes[c.ATTR_SIGNATURE_ALGORITHM] = cleaned.get("saml_signature_algorithm") or "RSA_SHA256"
        if (cleaned.get("saml_client_signature") or cleaned.get("saml_encrypt")) and \
                not attributes[c.ATTR_SIGNING_CERTIFICATE]:
            self.add_error("saml_signing_certificate",
                           "Required when client signatures are required or assertions are encrypted.")
        cleaned["attributes"] = {k: v for k, v in attributes.items() if v != ""}
        return cleaned


# Declared on the class (not added per instance) so that the admin's fieldsets may name them.
SamlClientForm = type(ClientForm)("SamlClientForm", (_SamlClientFormBase,),
                                  {"__module__": __name__, **_declared_fields()})


admin.site.unregister(Client)


@admin.register(Client)
class SamlAwareClientAdmin(ClientAdmin):
    form = SamlClientForm

    def get_fieldsets(self, request, obj=None):
        fieldsets = list(super().get_fieldsets(request, obj))
        if self.chosen_protocol(request, obj) == c.PROTOCOL:
            fieldsets.insert(-1, ("SAML capabilities (SAML clients only)", {"classes": ("tab-settings",),
                                                                            "fields": CAPABILITY_FIELDS}))
            fieldsets.insert(-1, ("SAML keys", {"classes": ("tab-keys",), "fields": list(_CERTIFICATES)}))
            fieldsets.insert(-1, ("SAML endpoints", {"classes": ("tab-settings",), "fields": list(_TEXTS)}))
        return fieldsets
