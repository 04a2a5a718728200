"""A TLS terminating proxy on loopback, as nginx with ``ssl_verify_client optional`` and
``proxy_set_header ssl-client-cert $ssl_client_escaped_cert``: it asks each client for a
certificate issued by the test CA, replaces whatever certificate header the client sent with the
one it verified (URL-encoded PEM), and forwards the request over plain HTTP to the server, which
trusts it (its ``IDP_TRUSTED_PROXIES``)."""
import http.client
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


class TlsProxy:
    def __init__(self, backend_port, *, cert_file, key_file, ca_file, header="ssl-client-cert"):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_file, key_file)
        context.load_verify_locations(ca_file)
        context.verify_mode = ssl.CERT_OPTIONAL
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in HOP_BY_HOP and k.lower() != header}
                der = self.connection.getpeercert(binary_form=True)
                if der:
                    headers[header] = quote(ssl.DER_cert_to_PEM_cert(der), safe="")
                headers["X-Forwarded-For"] = self.client_address[0]
                headers["X-Forwarded-Proto"] = "https"
                upstream = http.client.HTTPConnection("127.0.0.1", backend_port, timeout=30)
                try:
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    answer = upstream.getresponse()
                    content = answer.read()
                    self.send_response(answer.status)
                    for name, value in answer.getheaders():
                        if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                            self.send_header(name, value)
                    self.send_header("Content-Length", str(len(content)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(content)
                finally:
                    upstream.close()
                proxy.forwarded.append((self.command, self.path, bool(der)))

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

        self.forwarded = []
        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
