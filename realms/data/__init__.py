"""Data access beside the models: raw SQL and write batches (``rows``, ``bulk``), the caches
shared between processes and the cached realm configuration (``shared_cache``, ``realm_cache``),
secrets sealed at rest (``crypto``), user queries and the realms' signing keys. With
``realms.models`` the lowest layer: imports nothing of realms above it."""
