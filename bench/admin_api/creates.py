"""Users created one by one with a password through the Admin API, by several clients at once
(measure.py and compare.py)."""
import threading
import uuid

import requests


def create_users(users_url, headers, count, clients):
    """POST ``count`` users with a password to ``users_url`` from ``clients`` threads, each with
    its own keep-alive session; raises AssertionError with the first answers that were not 201."""
    failures = []

    def client(k):
        session = requests.Session()
        session.headers.update(headers)
        for i in range(k, count, clients):
            answer = session.post(users_url, timeout=60, json={
                "username": f"created{i:05d}-{uuid.uuid4().hex[:8]}", "enabled": True,
                "credentials": [{"type": "password", "value": f"Created-pass-{i}", "temporary": False}]})
            if answer.status_code != 201:
                failures.append(answer.text)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures[:3]
