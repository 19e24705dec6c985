"""Wall-clock timing shared by the benchmark scripts."""

from __future__ import annotations

import statistics
import time
from typing import Any


def median_ms(function: Any, repeats: int = 3) -> float:
    """Median wall time of FUNCTION in milliseconds, after one warm-up call."""
    function()
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)
