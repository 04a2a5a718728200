"""The Kerberos exchanges of the provider, through MIT Kerberos's GSS-API (python-gssapi):
accepting a browser's SPNEGO token with the service's keytab, and checking a password with an
AS exchange against the KDC (what ``kinit`` does). The KDC is found through the system's
``krb5.conf`` (or ``KRB5_CONFIG``), as Keycloak finds it through the JVM's."""
import base64
import binascii
import logging
from dataclasses import dataclass

import gssapi
from gssapi.raw import acquire_cred_from, acquire_cred_with_password

from ..errors import FederationError

logger = logging.getLogger("idp.federation.kerberos")

SPNEGO = gssapi.OID.from_int_seq("1.3.6.1.5.5.2")

# krb5 error codes (com_err table krb5, as GSS minor codes: unsigned 32-bit).
_PRINCIPAL_UNKNOWN = 0x96C73A06  # KRB5KDC_ERR_C_PRINCIPAL_UNKNOWN
_PREAUTH_FAILED = 0x96C73A18  # KRB5KDC_ERR_PREAUTH_FAILED
_BAD_INTEGRITY = 0x96C73A1F  # KRB5KRB_AP_ERR_BAD_INTEGRITY (a KDC without pre-authentication)
_CLIENT_REVOKED = 0x96C73A12  # KRB5KDC_ERR_CLIENT_REVOKED (locked or expired principal)
_KEY_EXPIRED = 0x96C73A17  # KRB5KDC_ERR_KEY_EXP (the password must be changed first)
_WRONG_PASSWORD = {_PREAUTH_FAILED, _BAD_INTEGRITY}
# A principal that exists, whatever else is wrong with the attempt.
_EXISTS = _WRONG_PASSWORD | {_CLIENT_REVOKED, _KEY_EXPIRED}
# A password no one has: probing with it tells whether a principal exists (Keycloak does the same).
_PROBE_PASSWORD = b"\x00probe: not the password of anyone\x00"


class KerberosUnavailable(FederationError):
    """The KDC could not be asked (unreachable, misconfigured)."""


def _principal(name):
    return gssapi.Name(name, gssapi.NameType.kerberos_principal)


def _as_exchange(principal, password):
    """None when the KDC issued a ticket, else the krb5 error code."""
    try:
        acquire_cred_with_password(_principal(principal), password, usage="initiate")
        return None
    except gssapi.exceptions.GSSError as error:
        code = error.min_code & 0xFFFFFFFF
        if code in _EXISTS or code == _PRINCIPAL_UNKNOWN:
            return code
        raise KerberosUnavailable(str(error)) from None


def check_password(principal, password, *, debug=False):
    """Whether the KDC accepts ``password`` for ``principal``."""
    code = _as_exchange(principal, password.encode())
    if debug:
        logger.info("kerberos: password of %s %s", principal, "accepted" if code is None else f"refused ({code:#x})")
    return code is None


def principal_exists(principal, *, debug=False):
    code = _as_exchange(principal, _PROBE_PASSWORD)
    exists = code is None or code in _EXISTS
    if debug:
        logger.info("kerberos: principal %s %s", principal, "exists" if exists else "not found")
    return exists


@dataclass
class Accepted:
    principal: str = ""  # the client principal once the context is established
    response_token: str = ""  # base64, for the next ``WWW-Authenticate: Negotiate`` header
    failed: bool = False


def accept(token, keytab, server_principal, *, debug=False):
    """One step of SPNEGO: accept the browser's base64 token with the keytab's key of
    ``server_principal`` (``*``: any key in the keytab)."""
    try:
        raw = base64.b64decode(token, validate=True)
    except (binascii.Error, ValueError):
        return Accepted(failed=True)
    name = None if server_principal == "*" else _principal(server_principal)
    try:
        creds = acquire_cred_from({b"keytab": keytab.encode()}, name, usage="accept").creds
        context = gssapi.SecurityContext(creds=gssapi.Credentials(creds), usage="accept")
        output = context.step(raw)
    except gssapi.exceptions.GSSError as error:
        # A token the keytab cannot accept (another service, a replay, a clock skew, a broken
        # keytab): the browser is refused; the details are for the operator's log.
        (logger.info if debug else logger.debug)("kerberos: SPNEGO token refused: %s", error)
        return Accepted(failed=True)
    response = base64.b64encode(output).decode() if output else ""
    if not context.complete:
        return Accepted(response_token=response)
    principal = str(context.initiator_name)
    if debug:
        logger.info("kerberos: SPNEGO established for %s", principal)
    return Accepted(principal=principal, response_token=response)
