"""Coverage-guided fuzzing of one target with atheris (libFuzzer), for ``scripts/fuzz.sh``.

    python -m tests.fuzz.run TARGET CORPUS_DIR [libFuzzer options, e.g. -max_total_time=300]

Needs the services of ``scripts/services.sh`` (a throw-away PostgreSQL and Redis): it makes a
test database the way the test suite does, builds the target's state, instruments the project's
code for coverage and hands control to libFuzzer, which exits with a non-zero status and writes
the input (``crash-*``) on the first finding. The seeds of ``corpus/TARGET`` start the corpus.
"""
import logging
import os
import sys

# Coverage is collected from these packages' code (instrumenting all of Django too would take
# minutes at every start for little gain): the project and the pure-Python parsers it calls.
INSTRUMENTED = ("realms", "oidc", "saml", "webhooks", "ambassador", "idp", "yaml", "urllib.parse", "django.http",
                "django.utils.http", "email")


def _instrument(atheris):
    import inspect

    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(INSTRUMENTED) or name.split(".")[0] not in {
                p.split(".")[0] for p in INSTRUMENTED}:
            continue
        for obj in list(vars(module).values()):
            members = vars(obj).values() if inspect.isclass(obj) and obj.__module__ == name else [obj]
            for member in members:
                member = getattr(member, "__func__", member)
                if inspect.isfunction(member) and member.__module__ == name:
                    atheris.instrument_func(member)


def main():
    name, corpus, *options = sys.argv[1:]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "idp.settings.test")
    import django

    django.setup()
    from django.test.utils import setup_databases, setup_test_environment

    setup_test_environment()
    setup_databases(verbosity=0, interactive=False)

    import atheris

    from tests.fuzz.targets import CORPUS, TARGETS, run_one

    target = TARGETS[name]
    state = target.setup()
    logging.disable(logging.CRITICAL)  # every refused input logs an event line: keep libFuzzer's output readable
    for seed in target.seeds():  # imports what the target loads lazily, so that it is instrumented too
        run_one(target, state, seed)
    _instrument(atheris)

    def one(data):
        run_one(target, state, data)

    atheris.Setup([sys.argv[0], *options, corpus, str(CORPUS / name)], one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
