// panva's openid-client (v6) with mutual TLS (RFC 8705) against a running server behind a TLS
// terminating proxy that asks for client certificates: discovery lists the mTLS endpoint aliases,
// client credentials with tls_client_auth (client_id only, the certificate authenticates) through
// them, a certificate-bound access token (cnf.x5t#S256 the SHA-256 of the certificate's DER,
// computed here by node:crypto), introspection and userinfo with the certificate; refused without
// a certificate or with another one. The certificate goes with every request of a customFetch
// built on node:https (openid-client's documented way, no extra package). IDP_ISSUER,
// IDP_CLIENT_ID, IDP_CA, IDP_CLIENT_CERT / IDP_CLIENT_KEY, IDP_OTHER_CERT / IDP_OTHER_KEY (files)
// from the environment; OPENID_CLIENT the package (the pinned release, or its alias of the
// newest). Run by tests/oidc/mtls/test_interop_openid_client.py.
import assert from "node:assert/strict";
import { createHash, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import https from "node:https";

const env = process.env;
const client = await import(env.OPENID_CLIENT ?? "openid-client");
const issuer = new URL(env.IDP_ISSUER);
const read = (name) => (env[name] ? readFileSync(env[name]) : undefined);
const claims = (jwt) => JSON.parse(Buffer.from(jwt.split(".")[1], "base64url").toString());

// A fetch presenting a client certificate (or none) and trusting the test CA.
function tlsFetch(cert, key) {
  const ca = read("IDP_CA");
  return (url, options = {}) => new Promise((resolve, reject) => {
    const headers = Object.fromEntries(new Headers(options.headers ?? {}));
    const body = options.body === undefined || options.body === null ? undefined : Buffer.from(String(options.body));
    if (body) headers["content-length"] = String(body.length);
    const request = https.request(url, { method: options.method ?? "GET", headers, ca, cert, key }, (res) => {
      const chunks = [];
      res.on("data", (chunk) => chunks.push(chunk));
      res.on("end", () => {
        const answer = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          for (const one of [].concat(value)) answer.append(name, one);
        }
        const content = [204, 304].includes(res.statusCode) ? null : Buffer.concat(chunks);
        resolve(new Response(content, { status: res.statusCode, headers: answer }));
      });
    });
    request.on("error", reject);
    if (body) request.write(body);
    request.end();
  });
}

const withCert = tlsFetch(read("IDP_CLIENT_CERT"), read("IDP_CLIENT_KEY"));
const options = { [client.customFetch]: withCert };
const config = await client.discovery(issuer, env.IDP_CLIENT_ID, { use_mtls_endpoint_aliases: true },
  client.TlsClientAuth(), options);
const metadata = config.serverMetadata();
assert.equal(metadata.tls_client_certificate_bound_access_tokens, true);
assert.ok(metadata.token_endpoint_auth_methods_supported.includes("tls_client_auth"));
assert.equal(metadata.mtls_endpoint_aliases.token_endpoint, metadata.token_endpoint);
config[client.customFetch] = withCert;

const x5t = createHash("sha256").update(new X509Certificate(read("IDP_CLIENT_CERT")).raw).digest("base64url");
const granted = await client.clientCredentialsGrant(config, {});
assert.equal(granted.token_type, "bearer");
assert.deepEqual(claims(granted.access_token).cnf, { "x5t#S256": x5t });

const introspected = await client.tokenIntrospection(config, granted.access_token);
assert.equal(introspected.active, true);
assert.deepEqual(introspected.cnf, { "x5t#S256": x5t });

// Userinfo (a protected resource) with the certificate; the same token without it is refused.
const info = await client.fetchProtectedResource(config, granted.access_token,
  new URL(metadata.userinfo_endpoint), "GET");
assert.equal(info.status, 200);
const bare = await tlsFetch()(metadata.userinfo_endpoint, { headers: { authorization: `Bearer ${granted.access_token}` } });
assert.equal(bare.status, 401);
assert.match(bare.headers.get("www-authenticate"), /error="invalid_token"/);

// Without a certificate, or with another client's, the client is not authenticated.
for (const fetch of [tlsFetch(), tlsFetch(read("IDP_OTHER_CERT"), read("IDP_OTHER_KEY"))]) {
  config[client.customFetch] = fetch;
  await assert.rejects(client.clientCredentialsGrant(config, {}), (err) => err.error === "invalid_client");
}

console.log("mtls script: ok");
