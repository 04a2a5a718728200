"""Every migration is safe for a rolling upgrade, by a rule a program checks (docs/operations/upgrades.md,
decision 0097): while the new release migrates and its nodes replace the old ones one by one, nodes
of the previous release keep reading and writing the same tables. So a migration only *expands* the
schema: new tables, new columns that the old code's INSERTs may leave out (nullable, or with a
database default), indexes; it never removes, renames, retypes or tightens what the old code uses.
A *contract* step (drop a column the code stopped using one release earlier, add NOT NULL to it...)
and data migrations (RunPython, RunSQL: what they do is not read here) are listed below, each
reviewed, with the reason it is safe or the upgrade it needs."""
from django.db import migrations, models
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.state import ProjectState
from django.db.models import NOT_PROVIDED

OUR_APPS = {"realms", "oidc", "saml", "federation", "webhooks"}

# Operations the previous release's code cannot notice.
EXPANDING = (migrations.CreateModel, migrations.AddIndex, migrations.RemoveIndex, migrations.RenameIndex,
             migrations.RemoveConstraint, migrations.AlterModelOptions, migrations.AlterModelManagers)

# (app, migration): why it is safe although the rule flags it. Reviewed one by one; a new entry needs
# the same review (a contract step ships one release after the code stopped using what it drops).
BEFORE_0097 = "before rolling upgrades were promised (decision 0097): an upgrade across it stops every node"
REVIEWED = {
    ("realms", "0002_component_user_federation_link"): BEFORE_0097,  # renames and drops user columns
    ("realms", "0003_authentication_flows"): "seeds built-in flows into tables it creates",
    ("realms", "0008_admin_permissions"): BEFORE_0097,  # two NOT NULL columns, no database default
    ("realms", "0009_realm_scim_api_enabled"): BEFORE_0097,  # a NOT NULL column, no database default
    ("realms", "0011_user_query_indexes"): "RunPython of CREATE INDEX statements only",
    ("realms", "0014_user_tally"): "creates a table, its triggers and drops an index; old INSERTs are counted "
                                   "by the triggers like new ones",
    ("realms", "0016_key_providers"): BEFORE_0097,  # realmkey.provider_id NOT NULL, no database default
    ("realms", "0021_forget_replaced_beat_entries"): "deletes beat entries of tasks no release runs any more",
    ("oidc", "0005_client_registration"): "seeds the default registration policies, rows old code never reads",
    ("oidc", "0006_resource_indicators"): BEFORE_0097,  # authorizationcode.resource NOT NULL, no default
    ("oidc", "0007_pushed_authorization"): BEFORE_0097,  # authorizationcode.dpop_jkt NOT NULL, no default
    ("webhooks", "0002_endpoint_lanes_handshake"): BEFORE_0097,  # endpoint.ownership_handshake NOT NULL
    ("webhooks", "0008_no_foreign_key_constraints"): "drops foreign-key constraints only (decision 0116): "
                                                     "every write of the previous release still succeeds",
}


def column(field):
    """What of a field's definition the database holds, NULL aside (checked apart: only NULL to NOT
    NULL is a hazard): its class and the arguments that are not Python-side only."""
    path, _, _, kwargs = field.deconstruct()
    ignored = {*field.non_db_attrs, "default", "null", "db_index"}  # an index comes and goes unnoticed
    return path, {k: v for k, v in kwargs.items() if k not in ignored}


def hazards(app_label, operations, state):
    """What in ``operations`` (applied in order on ``state``, a ProjectState) a node of the previous
    release would trip on; an empty list when they only expand the schema."""
    found, created = [], set()
    for op in operations:
        name = type(op).__name__
        if isinstance(op, migrations.CreateModel):
            created.add(op.name_lower)
        if isinstance(op, EXPANDING) or getattr(op, "model_name_lower", None) in created:
            pass  # a table the previous release does not know, whatever is done to it
        elif isinstance(op, migrations.AddField):
            field = op.field
            if not (field.null or field.db_default is not NOT_PROVIDED or field.many_to_many):
                found.append(f"AddField {op.model_name}.{op.name}: NOT NULL without a database default "
                             "(the previous release's INSERTs leave it out and fail)")
        elif isinstance(op, migrations.AlterField):
            old = state.models[app_label, op.model_name_lower].fields[op.name]
            new = op.field
            if old.null and not new.null:
                found.append(f"AlterField {op.model_name}.{op.name}: NULL to NOT NULL")
            if column(old) != column(new) or (old.db_column or op.name) != (new.db_column or op.name):
                found.append(f"AlterField {op.model_name}.{op.name}: the column's type, size, "
                             "uniqueness or name changes")
        elif isinstance(op, (migrations.RunPython, migrations.RunSQL)):
            found.append(f"{name}: a data migration, not judged by this rule")
        else:  # RemoveField, DeleteModel, Rename*, AlterModelTable, AlterUniqueTogether, AddConstraint...
            found.append(f"{name} on {getattr(op, 'model_name', None) or getattr(op, 'name', '')}: contracts the schema")
        op.state_forwards(app_label, state)
    return found


def our_migrations():
    loader = MigrationLoader(None, ignore_no_migrations=True)
    for key in sorted(k for k in loader.graph.nodes if k[0] in OUR_APPS):
        yield key, loader.graph.nodes[key], loader.project_state(key, at_end=False)


def test_every_migration_only_expands_unless_reviewed():
    flagged = {key: hazards(key[0], migration.operations, state)
               for key, migration, state in our_migrations()}
    unsafe = {key: found for key, found in flagged.items() if found and key not in REVIEWED}
    assert not unsafe, "migrations not safe for a rolling upgrade (docs/operations/upgrades.md):\n" + "\n".join(
        f"{app}.{name}: {'; '.join(found)}" for (app, name), found in unsafe.items())
    # A reviewed entry the rule no longer flags (or a migration gone) is dropped from the list.
    stale = [key for key in REVIEWED if not flagged.get(key)]
    assert not stale, f"reviewed but not flagged (remove from REVIEWED): {stale}"


def _state_with_a_table():
    state = ProjectState()
    migrations.CreateModel("Thing", [("id", models.AutoField(primary_key=True)),
                                     ("name", models.CharField(max_length=20, null=True))]
                           ).state_forwards("t", state)
    return state


def test_the_rule_tells_expanding_from_contracting():
    def check(*ops):
        return hazards("t", ops, _state_with_a_table())

    # Expanding: the previous release's reads and writes go on.
    assert check(migrations.AddField("thing", "note", models.TextField(null=True))) == []
    assert check(migrations.AddField("thing", "kind", models.CharField(max_length=8, db_default="a"))) == []
    assert check(migrations.AlterField("thing", "name", models.CharField(max_length=20, null=True,
                                                                         help_text="x"))) == []
    assert check(migrations.AddIndex("thing", models.Index(fields=["name"], name="thing_name"))) == []
    # A Python-side default is not in the table: the old INSERT, without the column, fails.
    assert check(migrations.AddField("thing", "kind", models.CharField(max_length=8, default="a")))
    assert check(migrations.AlterField("thing", "name", models.CharField(max_length=20)))  # NOT NULL now
    assert check(migrations.AlterField("thing", "name", models.TextField(null=True)))  # another type
    assert check(migrations.RemoveField("thing", "name"))
    assert check(migrations.RenameField("thing", "name", "title"))
    assert check(migrations.DeleteModel("thing"))
    assert check(migrations.RunSQL("SELECT 1"))
