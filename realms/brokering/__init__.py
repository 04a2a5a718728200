"""Identity brokering, protocol-neutral (spec 1 §2): a realm's identity providers, the types they
are (``providers``: OpenID Connect, OAuth 2 and social presets registered by ``federation``,
SAML by ``saml``), their mappers (``mappers``), the broker's endpoints and how a brokered sign-in
joins the realm's flows (``broker``), first broker login's steps, linked accounts and the
organizations' providers. The protocols plug in here; nothing here speaks one."""
