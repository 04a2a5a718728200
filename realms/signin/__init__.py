"""Signing in: what a flow is and the realm's stored flows (``flows``), the engine that runs them
and completes through the protocol that asked (``engine``), the password check every binding uses
(``passwords``), the steps and required actions, brute-force detection, levels of authentication
and the login-actions pages (``views``). Imports every layer below it; only administration, the
realm representation and the surfaces import it."""
