"""Text (rich) and JSON renderers; nothing else formats output."""
