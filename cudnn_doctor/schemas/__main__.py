"""`python -m cudnn_doctor.schemas [NAME]`: print a schema, or list them with their files."""

from __future__ import annotations

import sys

from cudnn_doctor.schemas import NAMES, schema_path

if len(sys.argv) > 1 and sys.argv[1] in NAMES:
    sys.stdout.write(schema_path(sys.argv[1]).read_text(encoding="utf-8"))
elif len(sys.argv) > 1:
    sys.stderr.write(f"no schema {sys.argv[1]!r}: one of {', '.join(NAMES)}\n")
    sys.exit(2)
else:
    for name in NAMES:
        print(f"cudnn-doctor/{name}/1\t{schema_path(name)}")
