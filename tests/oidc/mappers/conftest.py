"""Fixtures for the mapper tests: the token endpoint tests' realm (clients ``app``, ``spa``,
``api``, user alice), and a loopback server answering a sector identifier document."""
import pytest

from tests.oidc.endpoints.conftest import alice, http, realm  # noqa: F401 (fixtures)
from tests.oidc.mcp.conftest import documents  # noqa: F401 (fixture)


@pytest.fixture
def sector(documents):
    """The loopback server of the sector identifier documents (the metadata documents' server)."""
    return documents
