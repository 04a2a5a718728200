"""Two servers' CPU per user created with a password, in alternating rounds: the machine's speed
drifts by a fifth from one minute to the next, so only rounds taken side by side compare.
Each round makes CREATES users (after 20 warm-ups) by CLIENTS clients on one server, then the
same on the other (the order swapped each round), and reads each server's CPU from /proc.
Prints each server's CPU per user by round and the differences B - A.
Usage: compare.py URL_A PID_A URL_B PID_B   (env: ROUNDS=10 CREATES=300 CLIENTS=4 HASH=realm|negligible)"""
import os
import statistics
import sys

import requests

from bench.admin_api.creates import create_users
from bench.proc import tree_cpu

ROUNDS, CREATES, CLIENTS = (int(os.environ.get(k, d)) for k, d in (("ROUNDS", 10), ("CREATES", 300), ("CLIENTS", 4)))
# "negligible": the realm hashes with one PBKDF2 iteration, so the figure is the rest of the request.
HASH = os.environ.get("HASH", "realm")
REALM = f"compare-{HASH}"


def admin_headers(base):
    answer = requests.post(f"{base}/realms/master/protocol/openid-connect/token", timeout=30, data={
        "grant_type": "password", "client_id": "admin-cli", "username": os.environ["ADMIN_USER"],
        "password": os.environ["ADMIN_PASSWORD"]})
    answer.raise_for_status()
    headers = {"Authorization": "Bearer " + answer.json()["access_token"]}
    if requests.get(f"{base}/admin/realms/{REALM}", headers=headers, timeout=30).status_code == 404:
        rep = {"realm": REALM, "enabled": True}
        if HASH == "negligible":
            rep["passwordPolicy"] = "hashAlgorithm(pbkdf2-sha256) and hashIterations(1)"
        requests.post(f"{base}/admin/realms", headers=headers, json=rep, timeout=30).raise_for_status()
    return headers


def main():
    servers = [(sys.argv[1], int(sys.argv[2])), (sys.argv[3], int(sys.argv[4]))]
    spent = ([], [])
    for round_ in range(ROUNDS):
        for i in (0, 1) if round_ % 2 == 0 else (1, 0):
            base, pid = servers[i]
            headers = admin_headers(base)  # a fresh token each round (the master realm's lifespan is short)
            create_users(f"{base}/admin/realms/{REALM}/users", headers, 20, CLIENTS)
            before = tree_cpu(pid)
            create_users(f"{base}/admin/realms/{REALM}/users", headers, CREATES, CLIENTS)
            spent[i].append((tree_cpu(pid) - before) / CREATES * 1000)
    for name, figures in zip("AB", spent):
        print(f"{name}: server CPU per user {' '.join(f'{x:.2f}' for x in figures)} ms; "
              f"median {statistics.median(figures):.2f} ms ({1000 / statistics.median(figures):.0f}/s per core)")
    differences = [b - a for a, b in zip(*spent)]
    print(f"B - A by round: {' '.join(f'{d:+.2f}' for d in differences)} ms; median {statistics.median(differences):+.2f} ms")


if __name__ == "__main__":
    main()
