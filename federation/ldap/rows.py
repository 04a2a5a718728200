"""The rows of a directory's imported users, written through ``realms.data.rows`` without model
instances (building 100,000 ``User`` objects cost more than the database spent storing them):
new rows carry every column of ``User`` with the model's defaults, changed rows every column an
import reads."""
from django.utils import timezone

from realms.data.rows import insert_values, update_values
from realms.models import User
from realms.sso import sessions

# The columns an import reads and writes, besides the id and the link.
FIELDS = ("username", "email", "email_verified", "first_name", "last_name", "enabled", "attributes",
          "required_actions")


def existing(realm, usernames):
    """{username: {column: value}} of the realm's users with these names."""
    columns = ("id", "federation_link_id", *FIELDS)
    return {row[2]: dict(zip(columns, row)) for row in
            User.objects.filter(realm=realm, username__in=usernames).values_list(*columns)}


def insert(realm, component, rows):
    """New users (dicts of FIELDS plus ``id``) linked to ``component``."""
    if not rows:
        return
    fields = User._meta.concrete_fields
    fixed = {"realm_id": realm.pk, "federation_link_id": component.pk, "created": timezone.now()}
    defaults = {f.attname: f.get_default() for f in fields
                if f.attname not in fixed and f.attname not in FIELDS and f.attname != "id"}
    names = [f.attname for f in fields]
    insert_values(User, fields, [[values[name] for name in names]
                                 for values in ({**defaults, **fixed, **row} for row in rows)])


def grant(role_id, user_ids):
    """The role to each of these users (new ones: a realm's default role)."""
    through = User.roles.through
    insert_values(through, [through._meta.get_field("user"), through._meta.get_field("role")],
                  [[user_id, role_id] for user_id in user_ids])


def update(rows):
    """Changed users: (id, {column: value}) with every column of FIELDS. Their sessions' cached
    copies go too, as ``save()`` would have them go: a user the directory disabled or renamed is
    seen so by the next refresh."""
    update_values(User, [User._meta.get_field(f) for f in FIELDS],
                  [(pk, [values[f] for f in FIELDS]) for pk, values in rows])
    sessions.drop_users_sessions([pk for pk, _ in rows])
