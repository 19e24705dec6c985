"""`cudnn-doctor image` as text: the image, what it needs, this node, then the findings (as `check` prints them)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from cudnn_doctor.render.safe import escape
from cudnn_doctor.render.text import FINDING_MARKS, MARKS, print_with_commands, print_wrapped


def render_image(data: dict[str, Any], console: Console, verbose: bool = False) -> None:
    image, needs, node = data["image"], data["needs"], data["node"]
    platform = f"{image['os'] or '?'}/{image['arch'] or '?'}"
    digest = f", {image['digest'][:19]}…" if image.get("digest") else ""
    status = data["summary"]["status"]
    print_wrapped(console, f"{MARKS[status]} " + escape(f"Image {image['reference']} ({image['source']}, {platform}, "
                                                       f"{image['layers']} layer{'s' * (image['layers'] != 1)}{digest})"),
                  0, 4)
    lines = []
    by_version: dict[str, list[str]] = {}
    for claim in image["cuda"]:
        by_version.setdefault(claim["version"], []).append(claim["from"])
    for version, sources in by_version.items():
        lines.append(f"CUDA {version} ({'; '.join(sources)})")
    for install in image["cudnn"]:
        lines.append(f"cuDNN {install['version'] or '(version unread)'} {install['path'] or ''} "
                     f"[{install['source'] or 'file name'}]".replace("  ", " "))
    for framework in image["frameworks"]:
        built = f", built for CUDA {framework['cuda_built_for']}" if framework.get("cuda_built_for") else ""
        cpu = ", CPU-only build" if framework.get("details", {}).get("cpu_only") else ""
        lines.append(f"{framework['name']} {framework['version'] or '?'}{built}{cpu}")
    driver = node["driver"]
    here = (f"this node has {driver['version'] or 'a driver'} (CUDA {driver['cuda_driver_version']})"
            if driver["source"] != "none" else "this node has no NVIDIA driver")
    gpus = node["gpus"]
    if gpus:
        here += f", {len(gpus)} GPU{'s' * (len(gpus) != 1)}: " + ", ".join(sorted({g['name'] for g in gpus}))
    if needs["cuda"]:
        floor = f"driver >= {needs['min_driver']}" if needs["min_driver"] else "a driver"
        lines.append(f"needs {floor} (CUDA {needs['cuda']}, from {needs['from']}); {here}")
    else:
        lines.append(f"needs no CUDA that the image names; {here}")
    if verbose:
        lines += [f"{key}={value}" for key, value in image["env"].items()]
        lines += [f"label {key}={value}" for key, value in image["labels"].items()]
    lines += [f"note: {note}" for note in image["notes"]]
    for line in lines:
        print_wrapped(console, "• " + escape(line), 4, 6)
    for f in data["findings"]:
        print_wrapped(console, f"{FINDING_MARKS.get(f['severity'], '?')} [bold]{f['code']}[/] {escape(f['title'])}", 4, 6)
        print_wrapped(console, escape(f["detail"]), 8)
        print_with_commands(console, "[bold]Fix:[/] ", f["fix"], 8)
    counts = data["summary"]["counts"]
    if not counts.get("error") and not counts.get("warning"):
        print_wrapped(console, "[green]• The image fits this node.[/]", 0, 2)
    else:
        parts = [f"{n} {word}{'s' * (n != 1)}" for word, n in (("error", counts.get("error", 0)),
                                                                 ("warning", counts.get("warning", 0))) if n]
        print_wrapped(console, f"[{'red' if counts.get('error') else 'yellow'}]! Doctor found {' and '.join(parts)}.[/]",
                      0, 2)
