"""A console form never shows a stored secret: the realm's SMTP password is shown as Keycloak's
mask, and a form posted back with the mask keeps the stored password (Keycloak's console does
the same with ``**********``). A new password replaces it; an empty one clears it
(``keyed.SecretKey``)."""
MASK = "**********"
