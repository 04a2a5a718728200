"""RFC 8414 authorization server metadata: filled in by the MCP-readiness work."""
urlpatterns = []
