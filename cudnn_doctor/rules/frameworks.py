"""CD4xx: framework compatibility (filled in with the compat data)."""

from __future__ import annotations

RULES: tuple = ()
