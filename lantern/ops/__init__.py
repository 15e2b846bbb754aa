"""ops layer of lantern (see README.md for the map)."""
