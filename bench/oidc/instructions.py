"""Instructions per request of the token endpoint's grants, counted by callgrind, in one process.

CPU time on this shared 2-core VM spreads 20-30 % between runs of the same code, and the VM exposes
no hardware counters (``perf stat`` is not supported); an instruction count under valgrind's
callgrind does not move with the machine's load, so a change of a few per cent shows. The grants
run as ``cpu.py`` runs them (the production WSGI application, PostgreSQL and Redis, no HTTP
server); only the application's process is counted, not PostgreSQL's or Redis's (the refresh
makes no query and one Redis call, client credentials neither).

Each tree given (this one by default; ``OLD_TREE``'s too when set, each in turn, ``ROUNDS``
times) runs in a process of its own under ``valgrind --tool=callgrind --instr-atstart=no``: the
warm-up uncounted, then for each scenario N requests between two dumps taken with
``callgrind_control``, less an empty pair (the dumps' own cost). The sign-ins whose refresh tokens
it uses are made before, outside valgrind (whose CPU model has no AVX-512 for the Argon2 build).

Usage: instructions.py [N [SCENARIO ...]]   (env as cpu.py's, the realm made by setup_realm.py;
OLD_TREE=path ROUNDS=1; scenarios: refresh_token client_credentials refresh_token_es256)
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
import types

SCENARIOS = ("refresh_token", "client_credentials")


def _control(*args):
    subprocess.run(["callgrind_control", *args, str(os.getpid())], check=True, stdout=subprocess.DEVNULL)


def _oidc(name):
    from bench.oidc.cpu import BASE, OIDC
    from bench.oidc.users import ES256_REALM

    return f"{BASE}/realms/{ES256_REALM}/protocol/openid-connect" if name.endswith("_es256") else OIDC


def signins(names):
    """{scenario: the refresh token of a new sign-in} for the refresh scenarios."""
    from bench.oidc.cpu import token  # sets Django up
    from bench.oidc.users import PASSWORD, USER

    return {name: json.loads(token({"grant_type": "password", "username": USER, "password": PASSWORD,
                                    "scope": "openid"}, _oidc(name)))["refresh_token"]
            for name in names if name.startswith("refresh_token")}


def inside(n, names, refresh_tokens):
    """In the process callgrind runs: the scenarios, each counted between two dumps."""
    from bench.oidc.cpu import token  # sets Django up
    from realms.data import shared_cache

    # Under valgrind a request runs about 50 times slower: the copies' once-a-second generation
    # checks (a Redis GET each) would fall every few requests instead of every few hundred, and
    # with the machine's load. Their clock runs 50 times slower too.
    shared_cache.time = types.SimpleNamespace(monotonic=lambda: time.monotonic() / 50)

    def action(name):
        if name == "client_credentials":
            return lambda: token({"grant_type": "client_credentials"})
        data = {"grant_type": "refresh_token", "refresh_token": refresh_tokens[name]}
        return lambda: token(data, _oidc(name))

    actions = {name: action(name) for name in names}
    _control("--instr=on")
    for name, action in actions.items():
        for _ in range(20):  # warm-up: the realm's copies, the keys, the connections
            action()
        _control("--zero")
        _control(f"--dump=empty-{name}")
        for _ in range(n):
            action()
        _control(f"--dump=run-{name}")


def _dumps(directory):
    """{dump name: instructions} of one process's callgrind files."""
    counts = {}
    for path in glob.glob(os.path.join(directory, "callgrind.out.*")):
        name = total = None
        with open(path) as dump:
            for line in dump:
                if line.startswith("desc: Trigger: Client Request: ") or line.startswith("desc: Trigger: dump "):
                    name = line.split()[-1]
                elif line.startswith("summary:"):
                    total = int(line.split()[1])
        if name:
            counts[name] = total
    return counts


def count(tree, n, names):
    """{scenario: instructions per request} in a process of ``tree``'s code."""
    with tempfile.TemporaryDirectory() as directory:
        env = dict(os.environ, PYTHONPATH=tree, REFRESH_TOKENS=json.dumps(signins(names)))
        subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                        f"--callgrind-out-file={directory}/callgrind.out.%p",
                        sys.executable, os.path.abspath(__file__), "--inside", str(n), *names],
                       cwd=tree, env=env, check=True, stderr=subprocess.DEVNULL)
        counts = _dumps(directory)
    return {name: (counts[f"run-{name}"] - counts[f"empty-{name}"]) / n for name in names}


def main():
    args = sys.argv[1:]
    if args[:1] == ["--inside"]:
        inside(int(args[1]), args[2:], json.loads(os.environ["REFRESH_TOKENS"]))
        return
    n = int(args[0]) if args else 300
    names = args[1:] or SCENARIOS
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    trees = [("this tree", here)] + ([("OLD_TREE", os.environ["OLD_TREE"])] if os.environ.get("OLD_TREE") else [])
    print(f"instructions per request under callgrind, {n} requests a scenario "
          f"({time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())})")
    for round_ in range(int(os.environ.get("ROUNDS", "1"))):
        for label, tree in trees:
            rev = subprocess.run(["git", "-C", tree, "log", "-1", "--format=%h"], capture_output=True,
                                 text=True).stdout.strip()
            for name, per in count(tree, n, names).items():
                print(f"round {round_ + 1} {label:9s} {rev:8s} {name:22s} {per / 1e6:8.3f} M instructions")


if __name__ == "__main__":
    main()
