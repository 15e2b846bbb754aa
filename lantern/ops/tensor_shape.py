"""tensor_shape ops (issue 4, being written)."""
