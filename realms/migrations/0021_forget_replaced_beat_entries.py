# The beat schedule lives in django-celery-beat's tables, which keep an entry after its code is
# gone: the two tasks that realms.purge replaced would be sent for ever and refused by workers.
from django.db import migrations

REPLACED = ("realms.purge_expired_sessions", "webhooks.purge")


def forget(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(task__in=REPLACED).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("realms", "0020_key_use_and_symmetric_algorithms"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(forget, migrations.RunPython.noop)]
