"""Standard Webhooks: the sender (outbox, Celery delivery, log, redelivery) and a reusable receiver."""
