"""Celery tasks: thin wrappers; the work is in delivery.py and receiver.py so dev mode can run
the same functions in a thread."""
from celery import shared_task

from . import delivery, receiver


# acks_late + reject_on_worker_lost: a task whose worker dies goes back to the broker; the
# sweeper retakes its delivery anyway once the lease runs out, whichever comes first.
@shared_task(name="webhooks.deliver", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def deliver(delivery_id):
    delivery.attempt(delivery_id)


@shared_task(name="webhooks.process_received", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def process_received(received_id):
    receiver.process(received_id)


@shared_task(name="webhooks.sweep", ignore_result=True)
def sweep():
    delivery.sweep()


@shared_task(name="webhooks.purge", ignore_result=True)
def purge():
    delivery.purge()
