"""A real OpenLDAP server (Debian's ``slapd``) on free loopback ports with a throw-away
configuration and database: ``ldap://`` (StartTLS offered) and ``ldaps://`` with a certificate
from a throw-away CA, the Active Directory attributes of ``ad.schema``, and the password-policy
overlay (a minimum length, so that the directory's own refusal can be shown to users); the
provider's bind DN gets at most ``SIZE_LIMIT`` entries from a search that is not paged."""
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import ldap
import ldap.modlist

from tests.servers import make_tls_files

HERE = Path(__file__).resolve().parent
SUFFIX = "dc=example,dc=org"
ADMIN_DN = f"cn=admin,{SUFFIX}"  # the rootdn: seeds and inspects the directory
ADMIN_PASSWORD = "admin-secret"
# The provider's bind DN: an ordinary entry allowed to manage people, so the password policy
# applies to the changes it makes (it never does to the rootdn).
SERVICE_DN = f"cn=idp,{SUFFIX}"
SERVICE_PASSWORD = "service-secret"
PEOPLE = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"
MIN_PASSWORD_LENGTH = 8
# The provider's searches stop at this many entries unless paged (as Active Directory's
# MaxPageSize does), so that a sync proves it pages.
SIZE_LIMIT = 200
_PIPELINE = 200  # requests sent before reading answers (slapd closes a connection with too many pending)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _config(workdir, ca, cert, key):
    return f"""
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
include {HERE / 'ad.schema'}
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload ppolicy
pidfile {workdir}/slapd.pid
TLSCACertificateFile {ca}
TLSCertificateFile {cert}
TLSCertificateKeyFile {key}
sizelimit unlimited
database mdb
maxsize 4294967296
dbnosync
suffix "{SUFFIX}"
rootdn "{ADMIN_DN}"
rootpw {ADMIN_PASSWORD}
limits dn.exact="{SERVICE_DN}" size.soft={SIZE_LIMIT} size.hard={SIZE_LIMIT} size.pr=unlimited size.prtotal=unlimited
directory {workdir}/data
index objectClass eq
index uid,cn,mail eq,sub
index modifyTimestamp eq
overlay ppolicy
ppolicy_default "cn=default,ou=policies,{SUFFIX}"
ppolicy_use_lockout
access to attrs=userPassword
  by dn.exact="{SERVICE_DN}" write
  by self write
  by anonymous auth
  by * none
access to dn.subtree="{PEOPLE}"
  by dn.exact="{SERVICE_DN}" write
  by * read
access to dn.subtree="{GROUPS}"
  by dn.exact="{SERVICE_DN}" write
  by * read
access to * by * read
"""


def _seed(users=0):
    """The base entries, and ``users`` people bulk00000... (passwords ``password-<n>``)."""
    entries = [
        (SUFFIX, {"objectClass": [b"dcObject", b"organization"], "dc": [b"example"], "o": [b"Example"]}),
        (PEOPLE, {"objectClass": [b"organizationalUnit"], "ou": [b"people"]}),
        (GROUPS, {"objectClass": [b"organizationalUnit"], "ou": [b"groups"]}),
        (f"ou=policies,{SUFFIX}", {"objectClass": [b"organizationalUnit"], "ou": [b"policies"]}),
        (SERVICE_DN, {"objectClass": [b"organizationalRole", b"simpleSecurityObject"], "cn": [b"idp"],
                      "userPassword": [SERVICE_PASSWORD.encode()]}),
        (f"cn=default,ou=policies,{SUFFIX}", {
            "objectClass": [b"pwdPolicy", b"device"], "cn": [b"default"], "pwdAttribute": [b"userPassword"],
            "pwdMinLength": [str(MIN_PASSWORD_LENGTH).encode()], "pwdCheckQuality": [b"2"]}),
    ]
    out = []
    for dn, attrs in entries:
        out.append(f"dn: {dn}")
        for name, values in attrs.items():
            out += [f"{name}: {v.decode()}" for v in values]
        out.append("")
    for i in range(users):
        uid = f"bulk{i:06}"
        out += [f"dn: uid={uid},{PEOPLE}", "objectClass: inetOrgPerson", f"uid: {uid}", f"cn: {uid}", "sn: Bulk",
                f"mail: {uid}@example.org", f"userPassword: password-{i}", ""]
    return "\n".join(out)


class Slapd:
    def __init__(self, workdir, users=0):
        self.workdir = Path(workdir)
        (self.workdir / "data").mkdir(parents=True)
        self.ca_file, cert, key = make_tls_files(self.workdir, names=("localhost",), ips=("127.0.0.1",))
        conf = self.workdir / "slapd.conf"
        conf.write_text(_config(self.workdir, self.ca_file, cert, key))
        subprocess.run(["slapadd", "-f", str(conf), "-q"], input=_seed(users).encode(), check=True, capture_output=True)
        self.port, self.tls_port = _free_port(), _free_port()
        self.url = f"ldap://127.0.0.1:{self.port}"
        self.ldaps_url = f"ldaps://127.0.0.1:{self.tls_port}"
        self.proc = None
        self.start()

    def start(self):
        urls = f"ldap://127.0.0.1:{self.port}/ ldaps://127.0.0.1:{self.tls_port}/"
        # -d 0: in the foreground, so that the process is ours to stop (and SIGKILL in tests).
        self.proc = subprocess.Popen(["slapd", "-f", str(self.workdir / "slapd.conf"), "-h", urls, "-d", "0"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                self.admin().unbind_s()
                return
            except ldap.SERVER_DOWN:
                time.sleep(0.05)
        raise RuntimeError("slapd did not start")

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=20)
        self.proc = None

    def admin(self):
        conn = ldap.initialize(self.url)
        conn.simple_bind_s(ADMIN_DN, ADMIN_PASSWORD)
        return conn

    # -- test data ---------------------------------------------------------------------------

    def add_user(self, uid, password="password-1", *, sn=None, given="", mail="", ad_control=None, **extra):
        dn = f"uid={uid},{PEOPLE}"
        attrs = {"objectClass": [b"inetOrgPerson"], "uid": [uid.encode()], "cn": [(given or uid).encode()],
                 "sn": [(sn or uid).encode()]}
        if given:
            attrs["givenName"] = [given.encode()]
        if mail:
            attrs["mail"] = [mail.encode()]
        if ad_control is not None:
            attrs["objectClass"].append(b"adAccount")
            attrs["userAccountControl"] = [str(ad_control).encode()]
        if password:
            attrs["userPassword"] = [password.encode()]
        for name, value in extra.items():
            values = value if isinstance(value, list) else [value]
            attrs[name] = [v if isinstance(v, bytes) else v.encode() for v in values]
        conn = self.admin()
        try:
            conn.add_s(dn, ldap.modlist.addModlist(attrs))
        finally:
            conn.unbind_s()
        return dn

    def add_users(self, prefix, count):
        """``count`` users ``<prefix>00000``... without passwords, sent without waiting for each answer."""
        conn = self.admin()
        try:
            for start in range(0, count, _PIPELINE):
                uids = [f"{prefix}{i:05}" for i in range(start, min(start + _PIPELINE, count))]
                ids = [conn.add_ext(f"uid={uid},{PEOPLE}", ldap.modlist.addModlist({
                    "objectClass": [b"inetOrgPerson"], "uid": [uid.encode()], "cn": [uid.encode()], "sn": [b"Bulk"],
                    "mail": [f"{uid}@example.org".encode()]})) for uid in uids]
                for msgid in ids:
                    conn.result3(msgid)
        finally:
            conn.unbind_s()

    def add_group(self, cn, members):
        dn = f"cn={cn},{GROUPS}"
        conn = self.admin()
        try:
            conn.add_s(dn, ldap.modlist.addModlist({"objectClass": [b"groupOfNames"], "cn": [cn.encode()],
                                                     "member": [m.encode() for m in members]}))
        finally:
            conn.unbind_s()
        return dn

    def modify(self, dn, **attrs):
        conn = self.admin()
        try:
            conn.modify_s(dn, [(ldap.MOD_REPLACE, k, None if v is None else [x.encode() for x in
                                                                               (v if isinstance(v, list) else [v])])
                               for k, v in attrs.items()])
        finally:
            conn.unbind_s()

    def get(self, dn, *attrs):
        conn = self.admin()
        try:
            return conn.search_s(dn, ldap.SCOPE_BASE, attrlist=list(attrs) or None)[0][1]
        finally:
            conn.unbind_s()

    def delete_people(self):
        """Remove every user and group entry (between tests)."""
        conn = self.admin()
        try:
            for base in (PEOPLE, GROUPS):
                dns = [dn for dn, _ in conn.search_s(base, ldap.SCOPE_ONELEVEL, attrlist=["1.1"])]
                for start in range(0, len(dns), _PIPELINE):
                    for msgid in [conn.delete_ext(dn) for dn in dns[start:start + _PIPELINE]]:
                        conn.result3(msgid)
        finally:
            conn.unbind_s()
