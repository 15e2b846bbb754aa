"""Advanced-indexing ops: index, index_put_ (filled in by the indexing work)."""
