"""`python -m cudnn_doctor.schemas [NAME]`: print a schema, or list them with their files."""

from __future__ import annotations

import sys

from cudnn_doctor.schemas import NAMES, DamagedSchema, schema_path, schema_text

if len(sys.argv) > 1 and sys.argv[1] in NAMES:
    try:
        sys.stdout.write(schema_text(sys.argv[1]))
    except DamagedSchema as error:
        sys.stderr.write(f"cudnn-doctor: error: cudnn-doctor's own schema file {error} is damaged (fix: reinstall "
                         "cudnn-doctor: pip install --force-reinstall cudnn-doctor)\n")
        sys.exit(2)
elif len(sys.argv) > 1:
    sys.stderr.write(f"no schema {sys.argv[1]!r}: one of {', '.join(NAMES)}\n")
    sys.exit(2)
else:
    for name in NAMES:
        print(f"cudnn-doctor/{name}/1\t{schema_path(name)}")
