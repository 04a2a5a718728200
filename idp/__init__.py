from .celery import app as celery_app  # noqa: E402  (loaded with Django so @shared_task binds to it)

__all__ = ["celery_app"]
