"""Issue 43, round fifteen (helper r20): what round fourteen left. NCCL's and torch's settings read by their readers'
own grammars (NCCL 2.30's ncclParamOneOf and ncclParamBitsetOf, its interface lists, NCCL_CUMEM_ENABLE's and
NCCL_COMM_BLOCKING's own tests of their number, torch's getCvarBool); every helper program (each toolkit's nvcc,
ldconfig) answered through the one runner with its guarantees, and what it did said; the outputs machines read kept
one document each under hostile machine values; round fourteen's readers (XLA's stub-table names, the libdevice
folder) against hostile files."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.test_multi_gpu import MULTI_CODES, _gpus, _interfaces

pytestmark = pytest.mark.integration


# --- 2. NCCL's and torch's settings, as their own readers read them ----------------------------------------------

@pytest.mark.parametrize(("variable", "value", "code"), [
    # NCCL 2.30 ncclParamOneOf: trimmed, any case, ABORT is a level (before: ' INFO' and 'abort' were CD176)
    ("NCCL_DEBUG", " info", "CD181"),
    ("NCCL_DEBUG", "abort", None),
    ("NCCL_DEBUG", "Warn\t", None),
    ("NCCL_DEBUG", "INFOX", "CD176"),
    # ncclParamBitsetOf: P2P and ALLOC_HOST are names (before: refused by a letters-only pattern), '^' only first
    ("NCCL_DEBUG_SUBSYS", "INIT,P2P", None),
    ("NCCL_DEBUG_SUBSYS", "^init, alloc_host", None),
    ("NCCL_DEBUG_SUBSYS", "INIT,^NET", "CD176"),
    ("NCCL_DEBUG_SUBSYS", "INIT,FOO", "CD176"),
    # ncclCuMemEnable: param >= 0 ? param : (param == -2 && supported): 2 is on, -1 off, -2 the default
    ("NCCL_CUMEM_ENABLE", "2", None),
    ("NCCL_CUMEM_ENABLE", "-1", None),
    ("NCCL_CUMEM_ENABLE", "-2", None),
    # envConfigOverride takes 0 or 1 alone
    ("NCCL_COMM_BLOCKING", "0x1", None),
    ("NCCL_COMM_BLOCKING", "2", "CD176"),
    # a value of one character is not the user's list: NCCL picks by itself (strlen(env) > 1)
    ("NCCL_SOCKET_IFNAME", "x", None),
    ("NCCL_SOCKET_IFNAME", "^", None),
    # '^' with no entry after it leaves no interface at all (matchIfList of an empty list matches every name)
    ("NCCL_SOCKET_IFNAME", "^,", "CD175"),
    # '=' for the whole list: '=eth0,lo' names eth0 and lo exactly
    ("NCCL_SOCKET_IFNAME", "=eth0,lo", None),
    ("NCCL_SOCKET_IFNAME", "=eth,lo", None),  # lo exactly: one is left
    ("NCCL_SOCKET_IFNAME", "=eth", "CD175"),  # no interface is called exactly 'eth'
    ("NCCL_SOCKET_IFNAME", "eth0,=lo", None),  # '=lo' a prefix that matches nothing; eth0 is left
    ("NCCL_SOCKET_IFNAME", "=lo0,=eth0", "CD175"),  # '=eth0' is a name exactly (with its '='), lo0 none
])
def test_nccl_settings_read_by_nccls_own_readers(machine: Machine, tmp_path: Path, variable: str, value: str,
                                                 code: str | None) -> None:
    _gpus(machine, tmp_path, 2)
    _interfaces(machine, "eth0", "lo")
    machine.env[variable] = value
    report = machine.check_json()
    assert (codes(report) & MULTI_CODES) == ({code} if code else set()), [
        (f["code"], f["detail"]) for f in report["findings"] if f["code"] in MULTI_CODES]


def test_an_unknown_subsystem_says_nccls_own_rule() -> None:
    from cudnn_doctor.knowledge.data import load
    from cudnn_doctor.knowledge.environment import bitset_problem

    row = next(r for r in load("multi_gpu")["nccl_setting"] if r["variable"] == "NCCL_DEBUG_SUBSYS")
    said = bitset_problem(row, "INIT,^NET") or ""
    assert "'^NET'" in said and "only as the value's first character" in said and "whole value" in said


@pytest.mark.parametrize(("value", "refused"), [("yes", False), ("T", False), ("n", False), ("FALSE", False),
                                                ("2", True), (" 1", True), ("on", True)])
def test_torchs_blocking_wait_read_by_getcvarbool(value: str, refused: bool) -> None:
    """getCvarBool: y/yes/1/t/true, n/no/0/f/false in any case, no blank trimmed; anything else raises (TORCH_CHECK)
    where ProcessGroupNCCL is built. Before: 'yes' was refused, and '2' only 'ignored'."""
    from cudnn_doctor.knowledge import environment

    for variable in ("TORCH_NCCL_BLOCKING_WAIT", "NCCL_BLOCKING_WAIT"):
        row = environment.rows()[variable]
        assert row["on_error"] == "raises"
        assert (environment.grammar_problem(row, value) is not None) == refused, (variable, value)
