"""README.md stays the user's guide: its set-up commands are what CI runs, and it lists every code."""

from __future__ import annotations

import re
from pathlib import Path

from cudnn_doctor.codes import CODES

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_ci_runs_the_readme_test_command() -> None:
    blocks = re.findall(r"```bash\n(.*?)\n```", README.split("## Set-up", 1)[1], re.DOTALL)
    install_and_check, install_and_test = blocks[0].strip(), blocks[1].strip()
    assert "cudnn-doctor check" in install_and_check
    assert install_and_test in (ROOT / ".ci" / "run").read_text().splitlines()


def test_every_finding_code_is_in_the_readme() -> None:
    for code in CODES.values():
        assert f"| {code.code} | {code.severity} | {code.title} |" in README, code.code
