"""CIBA endpoints: filled in by the CIBA work."""
urlpatterns = []
