"""``manage.py webhooks_asyncapi``: print the AsyncAPI 3.0 document of the webhook catalogue
(docs/asyncapi.json is its output; a test keeps the two equal)."""
import json

from django.core.management.base import BaseCommand

from webhooks import schemas


class Command(BaseCommand):
    help = "Print the AsyncAPI 3.0 document of the webhook event catalogue (JSON)."

    def handle(self, *args, **options):
        self.stdout.write(json.dumps(schemas.asyncapi(), indent=2, ensure_ascii=False))
