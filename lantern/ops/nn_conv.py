"""nn_conv ops (issue 4, being written)."""
