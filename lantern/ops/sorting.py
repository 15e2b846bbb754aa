"""sorting ops (issue 4, being written)."""
