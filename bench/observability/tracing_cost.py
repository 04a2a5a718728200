"""What tracing and the query timer cost on the hot path: client-credentials grants through the
whole middleware stack (Django's test client, in-process, dev mode's SQLite), tracing off and on,
interleaved round by round in one run; and a trivial statement with and without each query
wrapper. Spans go to a batch processor whose exporter drops them: what is measured is what the
request's thread pays (making, filling and queueing spans), not the export, which runs in the
processor's own thread.

    .venv/bin/python bench/observability/tracing_cost.py [--rounds 15] [--requests 100]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ["DJANGO_SETTINGS_MODULE"] = "idp.settings.dev"
os.environ.setdefault("IDP_VAR_DIR", tempfile.mkdtemp(prefix="idp-bench-"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--requests", type=int, default=100)
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    from idp import metrics, tracing
    from realms.representation.importer import import_realm

    class Drop(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

    call_command("migrate", verbosity=0)
    import_realm({"realm": "bench", "enabled": True, "clients": [{
        "clientId": "svc", "publicClient": False, "secret": "svc-secret-1", "standardFlowEnabled": False,
        "serviceAccountsEnabled": True}]})
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop(), max_queue_size=100000))
    trace.set_tracer_provider(provider)

    def grants(on):
        settings.IDP_TRACING_ENABLED = on
        wrappers = connection.execute_wrappers
        if on and tracing.query_span not in wrappers:
            wrappers.append(tracing.query_span)
        if not on and tracing.query_span in wrappers:
            wrappers.remove(tracing.query_span)
        client = Client(HTTP_HOST="localhost")  # its handler builds the middleware chain under the switch
        started = time.perf_counter()
        for _ in range(args.requests):
            response = client.post("/realms/bench/protocol/openid-connect/token",
                                   {"grant_type": "client_credentials"},
                                   HTTP_AUTHORIZATION="Basic c3ZjOnN2Yy1zZWNyZXQtMQ==")
            assert response.status_code == 200, response.content
        return (time.perf_counter() - started) / args.requests * 1e6

    def statements(wrapper_list, on):
        settings.IDP_TRACING_ENABLED = on
        connection.execute_wrappers[:] = wrapper_list
        n = 2000
        with tracing.tracer().start_as_current_span("bench") if on else _nothing():
            started = time.perf_counter()
            with connection.cursor() as cursor:
                for _ in range(n):
                    cursor.execute("SELECT 1")
        return (time.perf_counter() - started) / n * 1e6

    grants(False), grants(True)  # warm both paths
    cells = {"grant, tracing off": [], "grant, tracing on": [], "SELECT 1, no wrapper": [],
             "SELECT 1, query timer (always on)": [], "SELECT 1, timer + query span (tracing on)": []}
    for _ in range(args.rounds):
        cells["grant, tracing off"].append(grants(False))
        cells["grant, tracing on"].append(grants(True))
        cells["SELECT 1, no wrapper"].append(statements([], False))
        cells["SELECT 1, query timer (always on)"].append(statements([metrics._timed], False))
        cells["SELECT 1, timer + query span (tracing on)"].append(
            statements([metrics._timed, tracing.query_span], True))
    provider.shutdown()
    medians = {name: statistics.median(values) for name, values in cells.items()}
    for name, value in medians.items():
        print(f"{name:45s} median {value:9.1f} µs")
    print(f"grant on/off: {medians['grant, tracing on'] / medians['grant, tracing off']:.3f}")
    print(f"query timer adds {medians['SELECT 1, query timer (always on)'] - medians['SELECT 1, no wrapper']:.1f} µs,"
          f" the span {medians['SELECT 1, timer + query span (tracing on)'] - medians['SELECT 1, query timer (always on)']:.1f}"
          " µs per statement")


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    main()
