"""The treatments that fit the platform, run before the generic ones (plan/planner.py): on WSL 2 the Windows driver,
never an apt driver or a reboot; in a container the runtime's flags and the node's driver; on a Jetson JetPack, its
cuDNN and NVIDIA's Jetson wheels, never a desktop driver, nvidia-ml-py or a server (SBSA) cuDNN. Every text is a
row of compat/platforms.toml, with its source."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from cudnn_doctor.knowledge.platforms import jetpack_row, treatment
from cudnn_doctor.model import CudnnInstall, Finding, Platform, Report
from cudnn_doctor.plan.actions import ENV, MANUAL, PIP, Action, EnvChange
from cudnn_doctor.quoting import code_span, command_line, in_prose
from cudnn_doctor.versions import ascii_digits


class _Work(Protocol):
    """What a treatment gets from the planner (plan/planner.py's _Work)."""

    report: Report
    setting: Any

    def take(self, found: Iterable[Finding], action: Action) -> None: ...

    def with_code(self, *codes: str) -> list[Finding]: ...

DRIVER_CODES = ("CD101", "CD103", "CD106", "CD403")
JETSON_PACKAGES = {"torch": "torch", "pytorch": "torch", "torchvision": "torchvision", "tensorflow": "tensorflow",
                   "jax": "jax", "onnxruntime": "onnxruntime-gpu"}


def _platform(work: _Work) -> Platform:
    return work.report.host.platform or Platform("linux")


def _text(row: dict[str, Any], values: dict[str, Any]) -> str:
    """ROW's text with VALUES in; a value inside a `command` is one word of it, quoted for the shell (a library's
    path may hold a space, $(...) or a quote), and the command one code span whatever backticks the value holds;
    in the prose a value's backticks are escaped (as knowledge/advice.py fills the advice)."""
    from cudnn_doctor.quoting import quote

    given = {k: v for k, v in values.items() if v is not None}
    words = _Fields({k: quote(str(v), "bash") for k, v in given.items()})
    prose = _Fields({k: in_prose(str(v)) for k, v in given.items()})
    parts = row["text"].split("`")
    return "".join(code_span(part.format_map(words)) if index % 2 else part.format_map(prose)
                   for index, part in enumerate(parts))


def platform_remedy(code: str, platform: Platform | None) -> str | None:
    """What the platform does about a finding of CODE where it is not what a plain Linux machine does, from the same
    rows as the plan's treatments (compat/platforms.toml): on WSL 2 a driver that failed or is too old is the
    Windows driver and `wsl --shutdown`, never a reboot, modprobe or an apt driver. None elsewhere. `explain` reads
    it for the codes a message shows, on this machine."""
    if platform is None or platform.kind != "wsl2":
        return None
    windows = _text(treatment("wsl2", "windows-driver", platform.container), {"min_driver": "the newest for your GPU"})
    restart = _text(treatment("wsl2", "restart-wsl", platform.container), {})
    texts = {"CD104": [restart], "CD110": [restart], "CD112": [windows, restart]}.get(code)
    if texts is None and code in DRIVER_CODES:
        texts = [windows]
    if not texts:
        return None
    text = "; or ".join(dict.fromkeys(texts))
    return text[:1].upper() + text[1:] + "."


class _Fields(dict):  # type: ignore[type-arg]
    def __missing__(self, key: str) -> str:
        return "the " + key.replace("_", " ")


def _manual(work: _Work, found: list[Finding], platform: str, name: str, title: str,
            values: dict[str, Any] | None = None) -> None:
    if not found:
        return
    row = treatment(platform, name, _platform(work).container)
    work.take(found, Action(MANUAL, (), title, row["source"], text=_text(row, values or {})))


def wsl_driver(work: _Work) -> None:
    """WSL 2: a Linux driver that shadows WSL's goes (its LD_LIBRARY_PATH folder, its package); every driver fix
    is the Windows driver's; a driver that failed to start is restarted with `wsl --shutdown`."""
    if _platform(work).kind != "wsl2":
        return
    shadows = work.with_code("CD152")
    if shadows:
        folders = tuple(dict.fromkeys(str(f.values["folder"]) for f in shadows if f.values.get("folder")))
        # what the shadowing driver made of the driver's answer goes with it
        misread = work.with_code("CD101", "CD104", "CD105", "CD110")
        if folders:
            work.take(shadows + misread, Action(ENV, (), "LD_LIBRARY_PATH puts a Linux driver before WSL's",
                                                "ld.so(8): LD_LIBRARY_PATH is searched before the ldconfig cache",
                                                env=tuple(EnvChange("LD_LIBRARY_PATH", "remove", f) for f in folders)))
        _manual(work, shadows + misread, "wsl2", "no-linux-driver", "a Linux NVIDIA driver inside WSL 2",
                {"library": shadows[0].values.get("library")})
    for found in work.with_code(*DRIVER_CODES):
        floor = found.values.get("min_driver")
        _manual(work, [found], "wsl2", "windows-driver", "on WSL 2 the driver is the Windows one",
                {"min_driver": floor if floor and ascii_digits(str(floor)[:1]) else "the newest for your GPU"})
    mapped_at = _platform(work).wsl_lib
    wsl_lib = os.path.realpath(mapped_at) if mapped_at else None
    for found in work.with_code("CD112"):  # cuInit's 803: from a Linux libcuda, or from WSL's own (the Windows one)
        view = work.report.process
        if view is not None and view.libcuda and wsl_lib and \
                os.path.realpath(os.path.dirname(view.libcuda)) == wsl_lib:
            # WSL's own libcuda refused: the Windows driver's answer; nothing of WSL's is taken away
            _manual(work, [found], "wsl2", "windows-driver", "on WSL 2 the driver is the Windows one",
                    {"min_driver": "the newest for your GPU"})
            _manual(work, [found], "wsl2", "restart-wsl", "the Windows driver's state is WSL's VM's")
            continue
        if view is not None and view.libcuda_via == "LD_LIBRARY_PATH" and view.libcuda_entry:
            work.take([found], Action(ENV, (), "LD_LIBRARY_PATH puts a Linux driver before WSL's",
                                      "ld.so(8): LD_LIBRARY_PATH is searched before the ldconfig cache",
                                      env=(EnvChange("LD_LIBRARY_PATH", "remove", view.libcuda_entry),)))
        _manual(work, [found], "wsl2", "no-linux-driver", "a Linux NVIDIA driver inside WSL 2",
                {"library": (view.libcuda if view is not None else None) or "libcuda.so.1"})
        _manual(work, [found], "wsl2", "restart-wsl", "the Windows driver's state is WSL's VM's")
    _manual(work, work.with_code("CD104", "CD110"), "wsl2", "restart-wsl", "the Windows driver's state is WSL's VM's")


def container_runtime(work: _Work) -> None:
    """In a container: the GPUs come from the runtime's flags, the driver from the node."""
    if _platform(work).container is None:
        return
    _manual(work, work.with_code("CD108", "CD101"), "container", "gpus-flag",
            "the container was started without the GPUs passed in")
    lost = [f for f in work.with_code("CD104") if "unknown error" in str(f.values.get("error", "")).lower()]
    _manual(work, lost, "container", "lost-devices", "the container's device access was taken away")
    for found in work.with_code("CD150", "CD151"):
        _manual(work, [found], "container", "image-needs-driver", found.title, found.values)


def jetson_stack(work: _Work) -> None:
    """A Jetson (JetPack 6 and older): JetPack's driver, JetPack's cuDNN, NVIDIA's Jetson wheels."""
    platform = _platform(work)
    if platform.kind != "jetson" or platform.sbsa is True:
        return  # JetPack 7 (Thor) runs the SBSA builds: the generic treatments fit
    row = jetpack_row(platform.l4t) or {}
    values = dict(jetpack=platform.jetpack or "(unknown to compat/)", l4t=platform.l4t or "(unread)",
                  cudnn_major=str(row.get("cudnn", "9")).split(".")[0], wheels=row.get("wheels"),
                  driver_cuda=work.report.driver.cuda_driver_version or row.get("cuda"))
    cudnn_found = work.with_code("CD154", "CD301", "CD303", "CD304", "CD305", "CD306", "CD312")
    for found in [f for f in cudnn_found if f.code == "CD154"]:
        install = next((i for i in work.report.cudnn if i.library == found.subject), None)
        python = work.setting.python or _python_of(work, install)
        dist = str(found.values.get("source") or "")
        # the server cuDNN goes: not onto the loader's path (CD310 of its folder is over with it)
        with_it = [found] + [f for f in work.with_code("CD310") if install and f.subject == install.path]
        why, source = "a server (SBSA) cuDNN does not run on a Jetson", str(row.get("source", "compat/platforms.toml"))
        if python and dist:
            work.take(with_it, Action(PIP, (), why, source, argv=(python, "-m", "pip", "uninstall", "-y", dist)))
        elif dist:
            where = install.path if install else "its environment"
            work.take(with_it, Action(MANUAL, (), why, source, text=f"{code_span(command_line(('pip', 'uninstall', '-y', dist)))} "
                                                                    f"with the pip of the environment that holds "
                                                                    f"{in_prose(where)}"))
    _manual(work, cudnn_found, "jetson", "jetpack-cudnn", "on a Jetson cuDNN comes with JetPack", values)
    cuda = str(row.get("cuda") or "")
    _manual(work, work.with_code("CD201", "CD202", "CD203"), "jetson", "jetpack-cuda",
            "on a Jetson the CUDA toolkit comes with JetPack", {**values, "cuda_package": cuda.replace(".", "-") or None})
    for found in work.with_code("CD401", "CD404", "CD406", "CD408"):
        name = str(found.values.get("framework") or "")
        framework = next((f for f in work.report.frameworks if _display(f.name) == name), None)
        package = JETSON_PACKAGES.get((framework.name if framework else name).lower())
        if package and row.get("wheels"):
            _manual(work, [found], "jetson", "jetson-wheels", "pypi.org's wheels are built for servers",
                    {**values, "framework": name, "package": package})
    _manual(work, work.with_code(*DRIVER_CODES, "CD104", "CD110"), "jetson", "jetpack-upgrade",
            "on a Jetson the driver comes with Jetson Linux", values)


def _display(name: str) -> str:
    from cudnn_doctor.knowledge import frameworks as knowledge

    return knowledge.display(knowledge.canonical_name(name) or name)


def _python_of(work: _Work, install: CudnnInstall | None) -> str | None:
    """The interpreter of the environment whose site-packages holds INSTALL, as its frameworks recorded it."""
    if install is None:
        return None
    for framework in work.report.frameworks:
        site = str(framework.details.get("site_packages") or "")
        if site and (install.real_path or install.path).startswith((site + os.sep, os.path.realpath(site) + os.sep)):
            return framework.details.get("python")  # type: ignore[no-any-return]
    return None


TREATMENTS: tuple[Callable[[_Work], None], ...] = (wsl_driver, container_runtime, jetson_stack)
