"""URL map for the receiver tests: our reusable receiver mounted like any app would mount it."""
from django.http import HttpResponse
from django.urls import path

from realms.models import Realm
from webhooks import signing
from webhooks.receiver import WebhookReceiver, verify_webhook

SECRETS = [signing.generate_secret()]
PRIVATE_KEY, PUBLIC_KEY = signing.generate_key_pair()
HANDLED = []

hooks = WebhookReceiver("tests", secrets=lambda: SECRETS + [PUBLIC_KEY])


@hooks.on("user.created")
def user_created(event):
    # Work done in the transaction that marks the event done: a realm named after the user id.
    Realm.objects.create(name=f"hook-{event.data['data']['id']}")
    HANDLED.append(event.event_id)


@hooks.on("always.fails")
def always_fails(event):
    Realm.objects.create(name=f"never-{event.event_id}")  # rolled back with the failure
    raise RuntimeError("handler bug")


@verify_webhook(secrets=lambda: SECRETS)
def plain(request):
    return HttpResponse(request.webhook_id)


urlpatterns = [path("hooks/tests", hooks.view), path("hooks/plain", plain)]
