import pytest


@pytest.mark.postgresql
@pytest.mark.django_db
def test_database_is_postgresql():
    from django.db import connection

    assert connection.vendor == "postgresql"
