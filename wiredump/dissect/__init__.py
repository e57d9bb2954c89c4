"""Capture → packets → TCP streams → protocol frames → correlation → tables."""
