"""Detection: one module per subject; each returns model objects and never prints."""
