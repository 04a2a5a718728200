"""Migration 0002 turns ``User.federation_link`` from a free string into a foreign key to a
stored component without losing a link: a user of an external store stays federated (and so is
refused at sign-in until its provider is configured) instead of becoming a local user."""
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE, AFTER = [("realms", "0001_initial")], [("realms", "0002_component_user_federation_link")]


@pytest.fixture(autouse=True)
def back_to_latest():
    """Later tests (and the flush after this one, which re-creates the master realm) need every
    table: the database is migrated forward again whatever the test left."""
    yield
    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture(autouse=True)
def back_to_the_latest_migrations():
    """Later migrations exist: the database goes back to all of them for the tests that follow."""
    yield
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


# Upgrades are production's: back at 0001, SQLite keeps the later migrations' realm columns (Django
# re-creates SQLite tables from the migrations' states), and 0001's realm cannot be written.
@pytest.mark.postgresql
def test_string_links_become_stored_components():
    old = _migrate(BEFORE)
    realm = old.get_model("realms", "Realm").objects.create(name="legacy")
    users = old.get_model("realms", "User").objects
    users.create(id="u1", realm=realm, username="dave", federation_link="ldap-1")
    users.create(id="u2", realm=realm, username="erin", federation_link="ldap-1")
    users.create(id="u3", realm=realm, username="frank", federation_link="")
    new = _migrate(AFTER)
    User = new.get_model("realms", "User")
    component = new.get_model("realms", "Component").objects.get(pk="ldap-1")
    assert (component.realm_id, component.provider_type, component.provider_id) == (
        realm.pk, "org.keycloak.storage.UserStorageProvider", "")
    assert {u.username: u.federation_link_id for u in User.objects.filter(realm_id=realm.pk)} == {
        "dave": "ldap-1", "erin": "ldap-1", "frank": None}
