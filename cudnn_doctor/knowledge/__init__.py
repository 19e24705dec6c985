"""Loading and querying the compatibility data in the top-level compat/ folder."""
