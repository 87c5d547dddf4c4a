"""middleware."""
