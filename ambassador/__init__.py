"""Ambassador: a loopback outbound proxy that carries one client's calls to remote services.

Standalone asyncio code; Django only provides the ``manage.py ambassador`` entry point.
"""
