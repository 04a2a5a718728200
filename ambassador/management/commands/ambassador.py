"""``manage.py ambassador --config FILE``: runs the outbound proxy (no Django on the request path)."""
from django.core.management.base import BaseCommand, CommandError

from ambassador import cli


class Command(BaseCommand):
    help = "Run the loopback outbound proxy (ambassador) with a YAML configuration file."
    requires_system_checks = []  # the proxy uses none of the project's models, URLs or database

    def add_arguments(self, parser):
        cli.add_arguments(parser)

    def handle(self, *args, **options):
        code = cli.run(options["config"], options["check"], options["log_level"])
        if code:
            raise CommandError(f"ambassador exited with status {code}", returncode=code)
