"""The base of the errors ``realms`` raises, on the lowest layer so that every room may import it.

Each surface turns what escapes its views into its own answer in one place: the Admin REST API
and the Account REST API in ``admin_api.errors.exception_handler`` (Keycloak's
``{"errorMessage": ...}``), SCIM in ``scim.errors.scim_error`` (RFC 7644's error body), the
pages with the message on the form. ``StoreRefused`` is the one a user's store raises from
below every surface (a directory refusing a write), so that none of them answers it with a 500."""


class RealmsError(Exception):
    """An error of ``realms``: its message is for the person who asked, never a stack trace."""


class StoreRefused(RealmsError):
    """A user's store refused a change as it was saved (a READ_ONLY directory, an entry the
    directory's schema refuses): the change is not made. ``str()`` is Keycloak's message for it
    ("User is read only!", "Could not update user!"); ``detail`` the store's own words, for the
    surfaces that show them (SCIM, the pages)."""

    def __init__(self, message, detail=""):
        super().__init__(message)
        self.message, self.detail = message, detail or message


class ReadOnlyUser(StoreRefused):
    """The user's store takes no change at all (a READ_ONLY directory): Keycloak's
    ReadOnlyException, which its Account REST API answers with a message key of its own."""

    def __init__(self):
        super().__init__("User is read only!")
