"""Authorization Services as Keycloak 26 (docs/decisions/0090): a client's resource server
settings, resources, scopes, policies and permissions, and their evaluation. Protocol-free: the
UMA grant, RPTs and the protection API that ask these questions live in ``oidc``."""
