"""Connections to a directory with python-ldap: ``ldap://`` (optionally StartTLS) or ``ldaps://``
with the server's certificate checked against the system CAs plus ``IDP_OUTBOUND_CA_BUNDLE`` (the
one trust store, Keycloak's truststore SPI), connect and read timeouts, and a pool of bound admin
connections (one per thread and provider configuration) when ``connectionPooling`` is on.
Password checks bind on a fresh connection, never on a pooled one."""
import threading
from urllib.parse import urlsplit

import ldap
from django.conf import settings
from ldap.controls import SimplePagedResultsControl

from realms.errors import StoreRefused
from realms.http import outbound

from ..errors import FederationError
from .config import ConfigError


class DirectoryUnavailable(FederationError):
    """The directory cannot be reached (down, refused, timed out, TLS failed)."""


class DirectoryError(FederationError):
    """The directory refused an operation; ``info`` is its own diagnostic message."""

    def __init__(self, message, info=""):
        super().__init__(message)
        self.info = info


class AddressRefused(DirectoryUnavailable):
    """A host of the connection URL resolves to an address the outbound policy refuses
    (``realms.http.outbound.check_host``, decision 0118): nothing was sent to it."""


def check_addresses(connection_url):
    """Every address of every host of the (space-separated) connection URLs must pass the
    outbound policy before python-ldap sees them; raises AddressRefused. python-ldap resolves the
    names again itself (the remaining rebinding window, decision 0118)."""
    for url in connection_url.split():
        try:
            parts = urlsplit(url)
            port = parts.port or (636 if parts.scheme.lower() == "ldaps" else 389)
        except ValueError as exc:
            raise AddressRefused(f"not a valid URL: {exc}") from None
        if not parts.hostname:
            raise AddressRefused(f"{url} has no host")
        try:
            outbound.check_host(parts.hostname, port, "connecting to LDAP server")
        except outbound.TargetRefused as exc:
            raise AddressRefused(f"LDAP server refused by the outbound policy: {exc}") from None


class PolicyRefused(DirectoryError):
    """testLDAPConnection's AddressRefused: ``info`` says which host and why."""


_UNREACHABLE = (ldap.SERVER_DOWN, ldap.TIMEOUT, ldap.CONNECT_ERROR)
_pool = threading.local()


def _options(conn, config):
    conn.set_option(ldap.OPT_PROTOCOL_VERSION, 3)
    conn.set_option(ldap.OPT_REFERRALS, 0)
    conn.set_option(ldap.OPT_NETWORK_TIMEOUT, config.connection_timeout_ms / 1000)
    conn.set_option(ldap.OPT_TIMEOUT, config.read_timeout_ms / 1000)
    conn.set_option(ldap.OPT_X_TLS_REQUIRE_CERT, ldap.OPT_X_TLS_DEMAND)
    ca_bundle = getattr(settings, "IDP_OUTBOUND_CA_BUNDLE", "")
    if ca_bundle:
        conn.set_option(ldap.OPT_X_TLS_CACERTFILE, ca_bundle)
    conn.set_option(ldap.OPT_X_TLS_NEWCTX, 0)


def connect(config, who=None, password=None):
    """A new connection bound as ``who`` (the provider's bind DN by default). Raises
    DirectoryUnavailable, or ldap.INVALID_CREDENTIALS for a refused bind."""
    if who is None:
        if config.auth_type == "simple":
            who, password = config.bind_dn, config.bind_credential
        else:
            who, password = "", ""
    if who and not password:
        # An empty password would be an unauthenticated bind (RFC 4513 5.1.2): it proves nothing.
        raise ldap.INVALID_CREDENTIALS({"desc": "Invalid credentials", "info": "empty password"})
    check_addresses(config.connection_url)
    conn = ldap.initialize(config.connection_url, bytes_mode=False)
    try:
        _options(conn, config)
        if config.start_tls and config.connection_url.lower().startswith("ldap://"):
            conn.start_tls_s()
        conn.simple_bind_s(who, password)
    except _UNREACHABLE as exc:
        raise DirectoryUnavailable(_describe(exc)) from None
    except ldap.LDAPError:
        conn.unbind_s()
        raise
    return conn


def _describe(exc):
    args = exc.args[0] if exc.args and isinstance(exc.args[0], dict) else {}
    return " ".join(x for x in (args.get("desc", ""), args.get("info", "")) if x and x != "(unknown error code)")


def refusal(message, exc):
    """The directory refusing a write (``exc``, python-ldap's error) as realms' StoreRefused:
    ``message`` is Keycloak's answer for the operation (it logs the cause and says only "Could
    not update user!"); the detail is the directory's own words, which SCIM and the pages show."""
    args = exc.args[0] if exc.args and isinstance(exc.args[0], dict) else {}
    words = ": ".join(x for x in (args.get("desc", ""), args.get("info", "")) if x) or "refused"
    detail = f"LDAP error: {words}"
    return StoreRefused(message or detail, detail)


def _key(config):
    return (config.component_id, config.connection_url, config.bind_dn, config.bind_credential, config.start_tls,
            config.auth_type)


class Directory:
    """The operations a provider needs, on a pooled (or per-call) admin connection, retried once
    on a connection the server has dropped."""

    def __init__(self, config):
        self.config = config

    def _conn(self):
        if not self.config.pooling:
            return connect(self.config)
        conns = getattr(_pool, "conns", None)
        if conns is None:
            conns = _pool.conns = {}
        key = _key(self.config)
        conn = conns.get(key)
        if conn is None:
            # A changed configuration (new key) replaces the thread's old connection.
            for old in [k for k in conns if k[0] == key[0]]:
                _close(conns.pop(old))
            conn = conns[key] = connect(self.config)
        return conn

    def _release(self, conn, broken=False):
        if not self.config.pooling:
            _close(conn)
        elif broken:
            conns = getattr(_pool, "conns", {})
            for k in [k for k, v in conns.items() if v is conn]:
                conns.pop(k)
            _close(conn)

    def call(self, operation, keep=False):
        """``operation(conn)`` on an admin connection; DirectoryUnavailable when unreachable.
        ``keep``: the caller goes on with the connection and releases it (``_release``)."""
        for attempt in (1, 2):
            conn = self._conn()
            try:
                result = operation(conn)
            except _UNREACHABLE as exc:
                self._release(conn, broken=True)
                if attempt == 2:
                    raise DirectoryUnavailable(_describe(exc)) from None
                continue
            except BaseException:
                self._release(conn)
                raise
            if not keep:
                self._release(conn)
            return result

    def search(self, base, filterstr, attrs, scope=None, size_limit=0):
        scope = scope if scope is not None else (ldap.SCOPE_SUBTREE if self.config.subtree else ldap.SCOPE_ONELEVEL)
        return self.call(lambda c: [(dn, a) for dn, a in c.search_ext_s(base, scope, filterstr, attrs,
                                                                         sizelimit=size_limit) if dn])

    def pages(self, base, filterstr, attrs):
        """Every matching entry, a page (``batchSizeForSync``) at a time when paging is on (the
        simple paged results control, RFC 2696), all pages on one connection."""
        if not self.config.pagination:
            yield self.search(base, filterstr, attrs)
            return
        scope = ldap.SCOPE_SUBTREE if self.config.subtree else ldap.SCOPE_ONELEVEL
        control = SimplePagedResultsControl(True, size=self.config.batch_size, cookie="")

        def page(conn):
            return conn.result3(conn.search_ext(base, scope, filterstr, attrs, serverctrls=[control]))

        conn, result = self.call(lambda c: (c, page(c)), keep=True)
        broken = False
        try:
            while True:
                _, data, _, controls = result
                yield [(dn, a) for dn, a in data if dn]
                control.cookie = next((c.cookie for c in controls
                                       if c.controlType == SimplePagedResultsControl.controlType), b"")
                if not control.cookie:
                    break
                result = page(conn)
        except _UNREACHABLE as exc:
            broken = True
            raise DirectoryUnavailable(_describe(exc)) from None
        finally:
            self._release(conn, broken)

    def check_password(self, dn, password):
        """Whether ``password`` binds as ``dn`` (on a fresh connection)."""
        try:
            _close(connect(self.config, dn, password))
        except (ldap.INVALID_CREDENTIALS, ldap.INVALID_DN_SYNTAX, ldap.UNWILLING_TO_PERFORM, ldap.NO_SUCH_OBJECT):
            return False
        return True

    def set_password(self, dn, password):
        """The password-modify extended operation (RFC 3062) by the provider's bind DN, or for
        Active Directory a replace of ``unicodePwd`` (the quoted password in UTF-16LE)."""
        def change(conn):
            if self.config.password_modify_op and not self.config.is_ad:
                conn.passwd_s(dn, None, password)
            else:
                value = f'"{password}"'.encode("utf-16-le")
                conn.modify_s(dn, [(ldap.MOD_REPLACE, "unicodePwd", [value])])
        try:
            self.call(change)
        except ldap.LDAPError as exc:
            args = exc.args[0] if exc.args and isinstance(exc.args[0], dict) else {}
            raise DirectoryError(args.get("desc", "LDAP error"), args.get("info", "")) from None

    def add(self, dn, modlist):
        self.call(lambda c: c.add_s(dn, modlist))

    def modify(self, dn, modlist):
        if modlist:
            self.call(lambda c: c.modify_s(dn, modlist))

    def delete(self, dn):
        self.call(lambda c: c.delete_s(dn))


def _close(conn):
    try:
        conn.unbind_s()
    except ldap.LDAPError:
        pass


def test_connection(config, action):
    """Keycloak's testLDAPConnection: ``testConnection`` reaches the server (and StartTLS) with an
    anonymous bind, ``testAuthentication`` binds with the bind DN and credential. Raises
    DirectoryError naming the cause (the API answers Keycloak's "LDAP test error"), PolicyRefused
    when the outbound policy refuses a host of the URL."""
    if action not in ("testConnection", "testAuthentication"):
        raise ConfigError("action must be testConnection or testAuthentication")
    try:
        _close(connect(config, *(("", "") if action == "testConnection" else ())))
    except AddressRefused as exc:
        raise PolicyRefused("refused by the outbound policy", str(exc)) from None
    except DirectoryUnavailable as exc:
        raise DirectoryError("cannot connect", str(exc)) from None
    except ldap.LDAPError as exc:
        raise DirectoryError("bind refused", _describe(exc)) from None
