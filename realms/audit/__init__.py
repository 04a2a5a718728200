"""What happened: user events (``events``: written once, in the transaction of the change they
record, then stored, logged and handed to listeners) and admin events (``admin_events``).
Imports ``data``, ``models`` and ``http``."""
