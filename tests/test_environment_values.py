"""Values from the environment (issue 43, class 4): read as the thing itself reads them, printed so that they cannot
cut what is around them. Digits are ASCII digits (CUDA reads `²` and `١` as no index at all); a backtick in a
machine value does not cut a fix in two; the plan's `why:` prints no command on a line of its own; a markdown cell
holds no raw control character."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.test_process_env import gpu_machine

UNICODE_DIGITS = ["²", "١", "٣", "0,١", "١,0", "0,²", "1,٠", "𝟎"]


@pytest.mark.parametrize("value", UNICODE_DIGITS)
def test_unicode_digits_in_cuda_visible_devices_are_no_index(machine_in_process: Machine, tmp_path: Path,
                                                            value: str) -> None:
    machine = machine_in_process
    gpu_machine(machine, tmp_path)
    machine.env["CUDA_VISIBLE_DEVICES"] = value
    result = machine.run("check", "--json")
    assert result.exit_code in (0, 1) and "internal error" not in result.stderr, result.stderr
    report = json.loads(result.stdout)
    plan = json.loads(machine.run("fix", "--json").stdout)
    for action in plan["actions"]:
        for line in action.get("env", {}).get("bash", []):
            if "CUDA_VISIBLE_DEVICES" in line:  # the treatment never writes the digit back
                assert line.isascii(), line
    visible = report["process"]["visible"] or []
    first = value.split(",")[0]
    if not first.isascii():  # CUDA stops at an entry it cannot read: none visible
        assert visible == [] or "CD113" in codes(report), report["process"]


def test_no_number_is_read_with_str_isdigit() -> None:
    """The class, not the case: a number from outside is read with versions.ascii_digits (0-9 only), never
    str.isdigit, which is true for '²' and '١'. The children that run without the package check descriptors they
    were given; knowledge/inputs.py looks for any digit on purpose, to refuse it."""
    import re

    from tests.conftest import ROOT

    allowed = {"_probe_jobs.py", "_deep_child.py", "_child_stdio.py", "versions.py", "inputs.py", "pip_effect.py", "context.py"}
    found = [f"{path.relative_to(ROOT)}:{number}" for path in sorted((ROOT / "cudnn_doctor").rglob("*.py"))
             if path.name not in allowed
             for number, line in enumerate(path.read_text().splitlines(), 1) if re.search(r"\w\)?\.isdigit\(\)", line)
             and not line.lstrip().startswith("#")]
    assert [f for f in found if "/image/" not in f] == [], found  # image/ is another session's, this round


BACKTICKED = ["a`b", "`x`", "a``b", "`touch P`", "x`touch P`y", "a\\`b", "```"]


@pytest.mark.parametrize("kept", BACKTICKED)
def test_a_backtick_in_a_machine_value_cuts_no_fix_and_makes_no_command(machine_in_process: Machine, tmp_path: Path,
                                                                       kept: str) -> None:
    """An allocator setting whose kept part holds backticks: the fix in the text and markdown reports is the one
    whole line `fix` prints, and the plan's why: prints no part of the value as a command on a line of its own."""
    import shlex

    machine = machine_in_process
    gpu_machine(machine, tmp_path)
    machine.env["PYTORCH_CUDA_ALLOC_CONF"] = f"expandable_segments_reserve:{kept},max_split_size_mb:x"
    line = "export PYTORCH_CUDA_ALLOC_CONF=" + shlex.quote(f"expandable_segments_reserve:{kept}")
    text = machine.run("check").stdout
    assert f"    {line}\n" in text, text[-1500:]
    markdown = machine.run("check", "--format", "markdown").stdout
    assert f"    {line}\n" in markdown
    plan = machine.run("fix").stdout.splitlines()
    assert f"       {line}" in plan, plan
    assert not [row for row in plan if row.strip() in ("touch P", "x", "`", "``")], plan
    [why] = [row for row in plan if row.strip().startswith("why: PYTORCH_CUDA_ALLOC_CONF")]
    assert why.rstrip().endswith(f"expandable_segments_reserve:{kept}"), why


def test_a_markdown_cell_holds_no_control_character() -> None:
    from cudnn_doctor.render.markdown import _cell

    hostile = "".join(chr(c) for c in [*range(0, 32), 127, *range(0x80, 0xA0)]) + "\u202e\u200b|`<b>"
    cell = _cell(f"GPU{hostile}name")
    assert all(c.isprintable() for c in cell), ascii(cell)
    assert "\\|" in cell and "\\`" in cell and "\\<b\\>" in cell


BACKTICK_VALUES = ["a`b", "`x`", "a``b", "/opt/bt`touch P`/lib/libcudnn.so.9", "end`"]


@pytest.mark.parametrize("value", BACKTICK_VALUES)
def test_every_advice_filled_with_backticks_keeps_each_command_whole(value: str) -> None:
    """Issue 43, class 4, for every row of compat/fixes.toml: each value filled with backticks (a folder named a`b);
    the advice has as many commands as its template, each the template's command with the value passed whole (bash
    reads it back as one word), and the prose around holds the value as written."""
    import shlex

    from cudnn_doctor.knowledge.advice import FIELD, _table, advice
    from cudnn_doctor.quoting import split_code_spans

    checked = 0
    for code, row in _table().items():
        names = set(FIELD.findall(row["text"]))
        if not names:
            continue
        text = advice(code, dict.fromkeys(names, value))
        parts = split_code_spans(text)
        template_commands = row["text"].split("`")[1::2]
        assert len(parts[1::2]) == len(template_commands), (code, text)
        for command, template in zip(parts[1::2], template_commands, strict=True):
            want = [FIELD.sub(lambda _found: value, word).replace("{{", "{").replace("}}", "}")
                    for word in shlex.split(template)]
            assert shlex.split(command) == want, (code, command)
        checked += 1
    assert checked > 10


def test_ld_library_path_is_split_as_ld_so_splits_it(machine: Machine, tmp_path: Path) -> None:
    """glibc's ld.so splits LD_LIBRARY_PATH at ';' as well as ':' (elf/dl-load.c): a cuDNN in a folder named a;b is
    not on the loader's path however the variable names it, so `fix --yes` cures nothing it cannot write a line for
    (it said CD310 was gone, the folder read whole), and check does not take it for the loader's."""
    from tests.fakes.build import fake_cudnn, fake_nvml
    from tests.test_shell_lines import CUDNN9

    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    machine.add_library_path(tmp_path / "driver")
    folder = tmp_path / "a;b" / "lib"
    fake_cudnn(folder, version=91900, cudart=13000, sublibraries=CUDNN9)
    data = json.loads(machine.run("fix", "--yes", "--json", "--search-path", str(folder)).stdout)
    assert "CD310" in data["after"]["codes"], data["after"]
    [step] = [a for a in data["actions"] if a["kind"] == "env"]  # its line is a comment: nothing was put in force
    assert step["env"]["bash"][0].startswith("#") and "not applied" in step["outcome"]["status"], step
    machine.add_library_path(folder)
    report = machine.check_json("--search-path", str(folder))
    [copy] = [c for c in report["cudnn"] if c["path"] == str(folder)]
    assert "ld.so" not in copy["loaded_by"], copy
