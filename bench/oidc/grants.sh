# The bench realm's client and token endpoint (bench/oidc/setup_realm.py), for the scripts that load
# its grants; sourced once U (the server's base URL) is set.
SECRET=bench-secret-0123456789abcdefghijklmnop
BASIC="Authorization: Basic $(printf 'bench-app:%s' $SECRET | base64 -w0)"
TOKEN=$U/realms/bench/protocol/openid-connect/token
FORM=application/x-www-form-urlencoded

# signin TOKEN-URL: the benchmark user's sign-in (password grant, scope openid); its refresh token.
signin() {
  curl -fs -u "bench-app:$SECRET" -d grant_type=password -d username=bench-user -d password=bench-password-1 \
    -d scope=openid "$1" | $PY -c 'import json,sys; print(json.load(sys.stdin)["refresh_token"])'
}
