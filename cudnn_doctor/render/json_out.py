"""JSON output: one object per command, written in one piece."""

from __future__ import annotations

import json
import sys
from typing import Any

written = False  # set once a command has printed its object: an error after that prints no second one


def write_json(data: dict[str, Any]) -> None:
    global written
    written = True
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")
    sys.stdout.flush()
