"""Hardware fakes for tests: C libraries built with gcc that the real probes load."""
