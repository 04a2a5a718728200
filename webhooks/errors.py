"""The base of the webhooks app's errors, named for the app as every app's base is
(``services.WebhookError`` is one of them: a subscription's input refused)."""


class WebhooksError(Exception):
    """An error of the webhooks app."""
