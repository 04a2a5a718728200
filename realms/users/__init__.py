"""Users and where they live: user storage providers (``storage``: the realm database and the
components other apps register; a password is set and a user deleted through the user's store),
the one way to create a user (``accounts``), the realm's required-action definitions
(``actions``), the user profile, organizations and consents. Imports ``data``, ``models``,
``http``, ``credentials``, ``audit`` and ``sso``."""
