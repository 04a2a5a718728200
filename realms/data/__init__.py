"""Data access beside the models: raw SQL, write batches and bulk writes (``rows``), the caches
shared between processes and the cached realm configuration (``shared_cache``, ``realm_cache``),
secrets sealed at rest (``crypto``), user queries and the realms' signing keys. With
``realms.models`` the lowest layer: imports nothing of realms above it."""
