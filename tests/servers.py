"""Real HTTP(S) receivers on loopback for the tests of outbound calls (``realms.http.outbound``, the
webhook sender): they record every request and answer from a script (status, headers, body,
delay), optionally over TLS with a throw-away CA."""
import datetime
import ipaddress
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def make_tls_files(directory, names=("hooks.test",), ips=("127.0.0.2",)):
    """A CA and a server certificate for ``names``/``ips``; returns (ca_file, cert_file, key_file)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "outbound test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    san = [x509.DNSName(n) for n in names] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(san), critical=False)
            .sign(ca_key, hashes.SHA256()))
    ca_file, cert_file, key_file = directory / "ca.pem", directory / "cert.pem", directory / "key.pem"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(ca_file), str(cert_file), str(key_file)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class Receiver:
    """Answers each request with the next scripted reply; when the script is empty, ``default``."""

    def __init__(self, host="127.0.0.1", tls=None, default=(200, {}, b"")):
        self.requests = []
        self.script = []
        self.default = default
        self.delay = 0.0
        self.sni = []
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with outer.lock:
                    outer.requests.append({"method": self.command, "path": self.path,
                                           "headers": dict(self.headers.items()),
                                           "body": body, "at": time.time()})
                    reply = outer.script.pop(0) if outer.script else outer.default
                    outer.arrived.notify_all()
                status, headers, payload = reply[:3]
                delay = reply[3] if len(reply) > 3 else outer.delay
                if delay:
                    time.sleep(delay)
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the sender gave up waiting (timeouts are part of the tests)

            do_GET = do_OPTIONS = do_POST

        _Server.address_family = family
        self.httpd = _Server((host, 0), Handler)
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(tls[0], tls[1])
            ctx.sni_callback = lambda sock, name, _ctx: self.sni.append(name) and None
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.host, self.port = host, self.httpd.server_address[1]
        self.scheme = "https" if tls else "http"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def url(self, path="/hook", host=None):
        h = host or self.host
        h = f"[{h}]" if ":" in h else h
        return f"{self.scheme}://{h}:{self.port}{path}"

    def wait_for(self, count, timeout=20.0):
        """Block until ``count`` requests arrived (bounded); returns the requests so far."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while len(self.requests) < count and time.monotonic() < deadline:
                self.arrived.wait(deadline - time.monotonic())
            return list(self.requests)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
