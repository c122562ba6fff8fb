"""The application layer: live tables, one pipeline per request (see docs/architecture.md)."""
