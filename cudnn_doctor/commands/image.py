"""`cudnn-doctor image REF`: the image judged here (doctor/image.py), rendered."""

from __future__ import annotations

from cudnn_doctor.doctor.image import judge_image_here


def main(ref: str, strict: bool, json_output: bool, verbose: bool, platform: str | None = None) -> None:
    """The command: the image read and judged, rendered; ends with SystemExit(status)."""
    data = judge_image_here(ref, strict, platform)
    if json_output:
        from cudnn_doctor.render.json_out import write_json

        write_json(data)
    else:
        from cudnn_doctor.render.console import console
        from cudnn_doctor.render.image_text import render_image

        render_image(data, console(), verbose)
    raise SystemExit(data["exit_code"])
