"""The base of the ambassador's errors (its configuration file, DNS, the token endpoint, an
upstream or a client gone); the ambassador is a separate process and imports nothing else here."""


class AmbassadorError(Exception):
    """An error of the ambassador."""
