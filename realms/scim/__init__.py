"""SCIM 2.0 provisioning (RFC 7643, RFC 7644) of a realm's users and groups, as Keycloak's
provisioning API serves it below ``/realms/<realm>/scim/v2`` (docs/decisions/0034-scim.md)."""
