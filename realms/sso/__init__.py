"""Who is signed in: SSO and client sessions (``sessions``), authentication sessions (sign-ins
under way), the SSO cookie, the device a session was opened from, and impersonation. Imports
``data``, ``models``, ``http``, ``credentials`` and ``audit``."""
