"""Celery tasks: thin wrappers; the work is in delivery.py and receiver.py so dev mode can run
the same functions in a thread."""
from celery import shared_task
from celery.signals import worker_shutdown

from . import delivery, receiver, sender


# A batch task only claims its rows and hands them to this process's sender lanes; what makes a
# killed worker lose nothing is the lease on the claimed rows, which the sweeper retakes.
@shared_task(name="webhooks.deliver", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def deliver(delivery_ids):
    delivery.process(delivery_ids)


@shared_task(name="webhooks.process_received", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def process_received(received_id):
    receiver.process(received_id)


@shared_task(name="webhooks.sweep", ignore_result=True)
def sweep():
    delivery.sweep()


@worker_shutdown.connect(dispatch_uid="webhooks.sender.shutdown")
def _finish_sends(**kwargs):
    # Warm shutdown: the sends in flight end (bounded by the timeout) and are recorded.
    sender.shutdown()
