"""The base of the project's own errors (a setting refused at start-up, a request body too large)."""


class IdpError(Exception):
    """An error of the ``idp`` project package."""
