"""nn_ops ops (issue 4, being written)."""
