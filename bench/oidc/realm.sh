# The bench realm on fresh services (bench/lib.sh's bench_start, bench/oidc/setup_realm.py) and
# its grants (grants.sh), for the scripts that load them: sourced from the checkout's root after
# the script's own settings. U: the first port's base URL, which every server's tokens carry as issuer.
command -v hey >/dev/null || apt-get install -y -qq hey >/dev/null
# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_start bench.oidc.settings
$PY bench/oidc/setup_realm.py >/dev/null
U=http://127.0.0.1:$PORT
# shellcheck source=bench/oidc/grants.sh
source bench/oidc/grants.sh
