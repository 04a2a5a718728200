"""Does a refresh cost more once sessions and refreshes have piled up? In one process (cpu.py's
WSGI loop, production settings), ``SIGNINS`` times: sign in with the password grant (a new SSO
session for the same user, as each round of ``refresh_ab.sh`` does), then ``BATCHES`` batches of
``N`` refreshes presenting that session's refresh token; per batch the CPU, instructions,
statements and Redis commands per refresh. After each sign-in's batches: what the shared cache
and the database hold (keys, the two copies' sizes, the user's session rows). Growth per refresh
shows within a sign-in's batches, growth per session across sign-ins.

Usage: refresh_growth.py [N [SIGNINS [BATCHES]]]   (env as cpu.py's; the realm made by setup_realm.py)
"""
import json
import os
import sys
import time

import redis
from django.db import connection
from django.test.utils import CaptureQueriesContext

from bench.oidc.cpu import METER, Instructions, token  # before the models: cpu.py sets Django up
from bench.oidc.users import PASSWORD, REALM, USER
from realms.models import ClientSession, Event, UserSession


def signin():
    return json.loads(token({"grant_type": "password", "username": USER, "password": PASSWORD,
                             "scope": "openid"}))["refresh_token"]


def batch(refresh_token, n, server):
    refresh = {"grant_type": "refresh_token", "refresh_token": refresh_token}
    commands = server.info("stats")["total_commands_processed"]
    METER.cpu = 0.0
    with CaptureQueriesContext(connection) as queries, Instructions() as counted:
        for _ in range(n):
            token(refresh)
    cpu = METER.cpu
    commands = server.info("stats")["total_commands_processed"] - commands - 2  # less the two INFOs
    instructions = f"{counted.count / n / 1e6:5.2f} M instr" if counted.count else "instr n/a"
    print(f"    {cpu / n * 1e6:6.0f} µs CPU, {instructions}, {len(queries) / n:4.2f} statements, "
          f"{commands / n:4.2f} Redis commands per refresh", flush=True)


def held(server):
    """What the shared cache and the database hold for the benchmark's user."""
    copies = {key: server.strlen(key) for key in server.scan_iter("*session:*")}
    sizes = sorted(copies.values())
    user_sessions = UserSession.objects.filter(realm__name=REALM, user__username=USER)
    print(f"  held: {server.dbsize()} Redis keys, {len(copies)} session copies of {min(sizes, default=0)}-"
          f"{max(sizes, default=0)} bytes; {user_sessions.count()} SSO sessions, "
          f"{ClientSession.objects.filter(user_session__in=user_sessions).count()} client sessions, "
          f"{Event.objects.count()} stored events", flush=True)


def main():
    args = [int(a) for a in sys.argv[1:]]
    n, signins, batches = (args + [1000, 4, 3][len(args):])[:3]
    server = redis.Redis.from_url(os.environ["IDP_REDIS_URL"])
    print(f"refresh growth, {n} refreshes x {batches} batches per sign-in, {signins} sign-ins "
          f"({time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, load average "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])})", flush=True)
    for k in range(1, signins + 1):
        refresh_token = signin()
        for _ in range(max(n // 10, 3)):  # warm-up: the client session's copy put, connections open
            token({"grant_type": "refresh_token", "refresh_token": refresh_token})
        print(f"  sign-in {k}:", flush=True)
        for _ in range(batches):
            batch(refresh_token, n, server)
        held(server)


if __name__ == "__main__":
    main()
