"""A real MIT Kerberos KDC on loopback for the Kerberos tests: a throw-away realm database,
``krb5.conf`` and ``kdc.conf`` in a temporary directory, ``krb5kdc`` on a free port, principals
and a keytab made with ``kadmin.local``. Started once per test run (tests/federation/conftest.py)."""
import os
import shutil
import socket
import subprocess
import time

REALM = "KERBEROS.TEST"
SERVICE_HOST = "localhost"  # the host name browsers and requests-gssapi use: HTTP/localhost@REALM
MASTER_PASSWORD = "master password of the test KDC"


def _free_port():
    # The KDC listens on UDP and TCP: a port free for both.
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp, \
                socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            tcp.bind(("127.0.0.1", 0))
            port = tcp.getsockname()[1]
            try:
                udp.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port


def _sbin(name):
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


class KDC:
    def __init__(self, directory):
        self.dir = directory
        self.port = _free_port()
        self.krb5_conf = directory / "krb5.conf"
        self.kdc_conf = directory / "kdc.conf"
        self.keytab = directory / "http.keytab"
        self.process = None
        self.env = {**os.environ, "KRB5_CONFIG": str(self.krb5_conf), "KRB5_KDC_PROFILE": str(self.kdc_conf)}

    def start(self):
        self.krb5_conf.write_text(
            "[libdefaults]\n"
            f"  default_realm = {REALM}\n"
            "  dns_lookup_kdc = false\n  dns_lookup_realm = false\n  rdns = false\n"
            "  dns_canonicalize_hostname = false\n  udp_preference_limit = 1\n"
            "[realms]\n"
            f"  {REALM} = {{\n    kdc = 127.0.0.1:{self.port}\n  }}\n"
            "[domain_realm]\n"
            f"  {SERVICE_HOST} = {REALM}\n")
        db = self.dir / "principal"
        self.kdc_conf.write_text(
            "[kdcdefaults]\n"
            f"  kdc_ports = {self.port}\n  kdc_tcp_ports = {self.port}\n"
            "[realms]\n"
            f"  {REALM} = {{\n"
            f"    database_name = {db}\n"
            f"    key_stash_file = {self.dir / 'stash'}\n"
            f"    acl_file = {self.dir / 'kadm5.acl'}\n"
            # Pre-authentication as real deployments have it: a wrong password is refused by the
            # KDC, never answered with a reply encrypted under the user's key.
            "    default_principal_flags = +preauth\n"
            "  }\n"
            "[logging]\n"
            f"  kdc = FILE:{self.dir / 'kdc.log'}\n")
        (self.dir / "kadm5.acl").write_text("")
        self._run(_sbin("kdb5_util"), "create", "-s", "-r", REALM, "-P", MASTER_PASSWORD)
        self.process = subprocess.Popen([_sbin("krb5kdc"), "-n", "-r", REALM], env=self.env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"krb5kdc did not start: {self.process.stderr.read().decode()}") from None
                time.sleep(0.05)
        self.kadmin(f"addprinc -randkey HTTP/{SERVICE_HOST}")
        self.kadmin(f"ktadd -k {self.keytab} HTTP/{SERVICE_HOST}")
        return self

    def stop(self):
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def _run(self, *args):
        done = subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(map(str, args))}: {done.stdout} {done.stderr}")
        return done.stdout

    def kadmin(self, query):
        return self._run(_sbin("kadmin.local"), "-r", REALM, "-q", query)

    def add_user(self, name, password):
        self.kadmin(f'addprinc -pw "{password}" {name}')

    @property
    def service_principal(self):
        return f"HTTP/{SERVICE_HOST}@{REALM}"

    def kinit(self, name, password, ccache):
        """A ticket cache file for ``name`` (what a desktop sign-in leaves behind)."""
        done = subprocess.run(["kinit", "-c", f"FILE:{ccache}", f"{name}@{REALM}"], input=password + "\n",
                              env=self.env, capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise RuntimeError(f"kinit {name}: {done.stderr}")
        # The service ticket too, as a desktop that used the site before has it.
        self._run("kvno", "-c", f"FILE:{ccache}", self.service_principal)
        return f"FILE:{ccache}"
