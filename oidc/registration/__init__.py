"""Dynamic client registration (RFC 7591 / 7592): filled in by the registration work."""
