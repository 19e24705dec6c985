"""How long one bench child may take (CUDNN_DOCTOR_BENCH_TIMEOUT): read by the runner of the bench child, the C
compiler's run and the peer-copy benchmark alike, from this module of its own (importing nothing of bench's)."""

from __future__ import annotations

DEFAULT_TIMEOUT_S = 600.0


def bench_timeout() -> float:
    """Seconds one child may take; CUDNN_DOCTOR_BENCH_TIMEOUT overrides."""
    from cudnn_doctor.child import timeout_from_env

    return timeout_from_env("CUDNN_DOCTOR_BENCH_TIMEOUT", DEFAULT_TIMEOUT_S)
