"""Device authorization grant (RFC 8628) endpoints: filled in by the device grant's work."""
urlpatterns = []
