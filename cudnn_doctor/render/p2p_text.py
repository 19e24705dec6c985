"""`bench --p2p` as text: each copy between two GPUs, its link and that link's peak, then its findings."""

from __future__ import annotations

from cudnn_doctor.render.safe import escape


def render_p2p(result: dict[str, object], console: object) -> None:
    """`bench --p2p` as a table: each copy, its link and that link's peak."""
    from cudnn_doctor.render.text import print_wrapped

    copies = result.get("copies") or []
    lines = ["copy             GB/s   link                          peak GB/s  share"]
    for copy in copies:  # type: ignore[attr-defined]
        share = f"{round(100 * copy['ratio'])} %" if copy.get("ratio") is not None else "-"
        peak = f"{copy['peak_gbs']:g}" if copy.get("peak_gbs") else "-"
        lines.append(f"GPU {copy['src']} -> GPU {copy['dst']}  {copy['gbs']:>7.1f}   {str(copy.get('link') or '-'):<29} "
                     f"{peak:>9}  {share}")
    for line in lines if copies else ["no copy was measured"]:
        console.print(escape(line), highlight=False)  # type: ignore[attr-defined]
    for found in result.get("findings") or []:  # type: ignore[attr-defined]
        print_wrapped(console, escape(f"{'✗' if found['severity'] == 'error' else '!'} {found['code']} "  # type: ignore[arg-type]
                                      f"{found['title']}: {found['detail']}"), 0, 4)
        if found.get("fix"):
            print_wrapped(console, escape(f"Fix: {found['fix']}"), 4, 6)  # type: ignore[arg-type]
