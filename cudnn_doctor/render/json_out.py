"""JSON output: one object per command, written in one piece."""

from __future__ import annotations

import json
import sys
from typing import Any

written = False  # set once a command has printed its object: an error after that prints no second one


def write_json(data: dict[str, Any]) -> None:
    from cudnn_doctor.user_files import escape_strings

    global written
    written = True
    # paths keep their non-UTF-8 bytes as lone surrogates in memory; JSON gets them as \xNN text
    sys.stdout.write(json.dumps(escape_strings(data), indent=2, sort_keys=False) + "\n")
    sys.stdout.flush()
