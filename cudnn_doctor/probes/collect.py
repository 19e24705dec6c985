"""Run every probe and put their answers into one Report.

The children that take longest (NVML, each library) start first, and the file
system is scanned while they run.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace

from cudnn_doctor import __version__
from cudnn_doctor.child import ChildBatch, ChildRequest, deadline_in, timeout_from_env
from cudnn_doctor.model import CudnnInstall, Host, LibraryProbe, Report, Tool, Toolkit
from cudnn_doctor.probes import cudnn as cudnn_probe
from cudnn_doctor.probes.child import Job, ProbeBatch, run_jobs
from cudnn_doctor.probes.context import SearchContext
from cudnn_doctor.probes.driver import NVML_JOB, NVML_NOT_FOUND, read_driver
from cudnn_doctor.probes.frameworks import detect_frameworks, link_frameworks_to_installs, theano_flags
from cudnn_doctor.probes.loader import (
    cache_from_answer,
    find_nvml,
    ldconfig_command,
    loader_search_dirs,
    may_load,
    may_load_nvml,
    resolve_like_loader,
    under_prefix,
)
from cudnn_doctor.probes.platform import detect_platform, libcuda_target
from cudnn_doctor.probes.process_env import (
    CUDA_JOB,
    early_reasons,
    preload_entries,
    read_process_view,
    reasons_to_ask_cuda,
    visible_from_nvml,
)
from cudnn_doctor.probes.toolkit import discover_toolkits, nvcc_version_in, runtime_version
from cudnn_doctor.user_files import is_regular_file


def collect_report(ctx: SearchContext, sublibraries: dict[int, list[str]], project_dir: str | None = None,
                   deep: bool = False, while_children_run: Callable[[], object] | None = None,
                   progress: Callable[[str], None] | None = None) -> Report:
    """Everything the probes can see, as plain data; no judgement. WHILE_CHILDREN_RUN, the caller's own work
    (check loads its rules and plan there), is done once the file system is read, while the children
    (each library, NVML, CUDA) still answer: a core would otherwise wait idle for them. PROGRESS, where given, is
    told in words what is being waited for (the command shows it on a terminal)."""
    from cudnn_doctor.probes.child import probe_timeout

    say = progress or (lambda _text: None)
    say("reading the driver, CUDA toolkits, cuDNN copies and frameworks")

    probe_timeout()  # a time limit set wrong is said now, before any child starts (its threads would lose it)
    timeout_from_env("CUDNN_DOCTOR_HELPER_TIMEOUT", HELPER_BUDGET_S)
    started = time.perf_counter()
    # On a GPU machine NVML's child costs as much as every other probe together (it opens the driver, as
    # nvidia-smi does): it starts first, wherever the loader may find libnvidia-ml, and runs beside the rest.
    nvml_batch: ProbeBatch | None = ProbeBatch([NVML_JOB]) if may_load_nvml(ctx) else None
    # CUDA itself (cuInit, 0.2 s a GPU) beside it, where the environment alone already says it must be asked
    early_cuda = ProbeBatch([CUDA_JOB]) if ctx.prefix == "/" and early_reasons(ctx, deep) and (
        preload_entries(ctx.env) or may_load(ctx.layout.libcuda, ctx)) else None
    # Helper programs (ldconfig, each nvcc that must be asked) run side by side under one budget, through
    # the child runner: a hanging one costs the budget once, and none outlives check. ldconfig first: its
    # answer is waited for soonest (the loader's cache), while the toolkits are looked for.
    helpers = HelperRuns(ctx)
    toolkits, dangling_variables = discover_toolkits(ctx)
    # each toolkit's libcudart answers while the loader's cache is read and cuDNN is looked for
    cudart_jobs = {tk.path: Job("cudart", tk.cudart) for tk in toolkits if tk.cudart and is_regular_file(tk.cudart)}
    cudart_batch = ProbeBatch(list(cudart_jobs.values()))
    helpers.ask_nvcc(toolkits)
    cache = helpers.ldconfig_cache()
    # No libnvidia-ml where the loader looks (LD_LIBRARY_PATH, its cache, the system folders): no driver,
    # and no need to hear NVML say so. The loader's exact answer decides whether NVML's child is read.
    nvml_present = find_nvml(ctx, cache) is not None
    if nvml_batch is not None and not nvml_present:
        nvml_batch.stop()
        nvml_batch = None
    elif nvml_batch is None and nvml_present:
        nvml_batch = ProbeBatch([NVML_JOB])
    # what a program started here gets from CUDA (cuInit, the GPUs left visible): asked beside NVML
    asked = reasons_to_ask_cuda(ctx, cache, always=deep)
    target = libcuda_target(ctx, cache)  # the soname, but under a prefix what only its cache or folders find
    cuda_job = CUDA_JOB if target == CUDA_JOB.target else Job("cuda", target)
    if early_cuda is not None and (not asked or cuda_job != CUDA_JOB):
        early_cuda.stop()
        early_cuda = None
    cuda_batch = early_cuda or ProbeBatch([cuda_job] if asked else [])
    report = Report(tool=Tool("cudnn-doctor", __version__), host=replace(_host(), platform=detect_platform(ctx, cache)))

    for path in ctx.search_paths:
        if not os.path.exists(path):
            report.search_errors.append((path, "no such folder"))
        elif not os.path.isdir(path):
            report.search_errors.append((path, "not a folder"))
        elif not os.access(path, os.R_OK | os.X_OK):
            report.search_errors.append((path, "permission denied: the folder cannot be read"))

    theano_flags(ctx, report.unreadable_files)  # read once more only to record what cannot be read
    report.loader_path = loader_search_dirs(ctx, cache)
    report.loader_path_real = [os.path.realpath(folder) for folder in report.loader_path]
    report.ld_library_path = ctx.library_path()
    report.ld_library_path_real = [os.path.realpath(folder) for folder in report.ld_library_path]
    report.dangling_variables = dangling_variables
    libraries = cudnn_probe.discover_cudnn_libraries(ctx, toolkits, cache)
    majors = sorted({m for m in (cudnn_probe.library_major(lib) for lib, _, _ in libraries) if m})

    # a FIFO or device is never handed to the loader: it would wait on it until the deadline
    library_jobs = {lib: Job("cudnn", lib) for lib, _, _ in libraries if cudnn_probe.probe_target(lib)}
    loader_jobs = {major: Job("cudnn", ctx.layout.cudnn.format(major=major)) for major in majors
                   if _loader_pick_is_loadable(ctx.layout.cudnn.format(major=major), ctx, cache)}
    batch = ProbeBatch([*library_jobs.values(), *loader_jobs.values()])
    scanned = time.perf_counter()

    frameworks = detect_frameworks(ctx, project_dir)
    frameworks_done = time.perf_counter()
    deep_imports = None
    if deep:  # the import children (seconds each) run beside the other probes, all at once
        from cudnn_doctor.probes.deep import DeepImports

        deep_imports = DeepImports(frameworks)
        names = ", ".join(dict.fromkeys(f.name for f in frameworks))
        say(f"--deep: {names}: each one's first GPU steps in a child of its own" if names else
            "--deep: no framework found to run; reading the driver, CUDA and cuDNN")
    if while_children_run is not None:
        while_children_run()

    answers = batch.results()
    answers.update(cudart_batch.results())
    report.toolkits = [_finish_toolkit(tk, answers[cudart_jobs[tk.path]] if tk.path in cudart_jobs else None,
                                       helpers.nvcc_version(tk))
                       for tk in toolkits]
    installs = [
        cudnn_probe.build_install(lib, source, aliases, answers[library_jobs[lib]] if lib in library_jobs else None,
                                  ctx, sublibraries)
        for lib, source, aliases in libraries
    ]
    for job in loader_jobs.values():
        picked = answers[job].values.get("loaded_path") if answers[job].loaded else None
        if picked:
            installs = _mark_loaded_by(installs, os.path.realpath(picked), "ld.so")
    report.frameworks, installs = link_frameworks_to_installs(frameworks, installs, ctx, cache)
    report.cudnn = installs

    nvml = nvml_batch.results()[NVML_JOB] if nvml_batch is not None else NVML_NOT_FOUND
    probed = time.perf_counter()
    cuda = cuda_batch.results().get(cuda_job)
    if cuda is None and not nvml.values.get("ok") and resolve_like_loader(ctx.layout.libcuda, [], ctx, cache):
        asked = ["NVML did not answer"]  # the driver's release then comes from libcuda itself
        cuda = run_jobs([cuda_job])[cuda_job]
    report.driver, report.gpus, report.nvml_error = read_driver(nvml, cuda)
    if cuda is None and len({(g.name, g.compute_capability) for g in report.gpus}) > 1 \
            and "CUDA_DEVICE_ORDER" not in ctx.env and resolve_like_loader("libcuda.so.1", [], ctx, cache):
        asked = ["GPUs of different kinds: CUDA numbers them fastest first, nvidia-smi by PCI bus"]
        cuda = run_jobs([CUDA_JOB])[CUDA_JOB]
    from_nvml = None
    visible_devices = ctx.env.get("CUDA_VISIBLE_DEVICES")
    if cuda is None and visible_devices is not None and resolve_like_loader("libcuda.so.1", [], ctx, cache):
        # indices or whole UUIDs (Slurm sets indices): NVML's GPUs in the order named, without cuInit; anything NVML cannot
        # answer for (an index it has no GPU for, several kinds, MIG) is CUDA's to say
        from_nvml = visible_from_nvml(visible_devices, report.gpus, ctx.env)
        if from_nvml is None:
            asked = ["CUDA_VISIBLE_DEVICES is set, and NVML's GPUs alone cannot say what it leaves"]
            cuda = run_jobs([cuda_job])[cuda_job]
    versions = {os.path.realpath(i.library): i.version for i in report.cudnn}
    report.process = read_process_view(ctx, cuda, report.gpus, report.frameworks, versions, cache, asked, from_nvml)
    helpers.finish()
    if deep_imports is not None:
        from cudnn_doctor.probes.deep import confirm_frameworks

        if names:
            say(f"--deep: waiting for {names} (at most {deep_imports.timeout:g} s, CUDNN_DOCTOR_DEEP_TIMEOUT)")

        report.frameworks, report.cudnn = confirm_frameworks(report.frameworks, report.cudnn, deep_imports)
    slowest = max((answer.values.get("child_ms", 0.0) for answer in answers.values()), default=0.0)
    report.timings_ms = {
        "slowest_library_child": slowest,
        "nvml_child": nvml.values.get("child_ms", 0.0),
        "frameworks": round((frameworks_done - scanned) * 1000, 1),
        "scan": round((scanned - started) * 1000, 1),
        "probes": round((probed - started) * 1000, 1),
        "total": round((time.perf_counter() - started) * 1000, 1),
    }
    return report


HELPER_BUDGET_S = 10.0


class HelperRuns:
    """`ldconfig -p` (started at once) and `nvcc --version` of each toolkit whose files name no version (once the
    toolkits are found), side by side with one deadline for all (CUDNN_DOCTOR_HELPER_TIMEOUT seconds, 10 by
    default)."""

    def __init__(self, ctx: SearchContext) -> None:
        self.budget = timeout_from_env("CUDNN_DOCTOR_HELPER_TIMEOUT", HELPER_BUDGET_S)
        self.deadline = deadline_in(self.budget)
        self.arch = ctx.arch
        self.ctx = ctx
        ldconfig = ldconfig_command(ctx)
        self._ldconfig = ChildBatch([ChildRequest(tuple(ldconfig), ctx.env, self.budget, "ldconfig -p")],
                                    deadline=self.deadline) if ldconfig else None
        self._nvcc: dict[str, int] = {}
        self._nvcc_batch = ChildBatch([])

    def ask_nvcc(self, toolkits: list[Toolkit]) -> None:
        """Start `nvcc --version` of each of TOOLKITS whose files name no version, under the same deadline."""
        requests: list[ChildRequest] = []
        for toolkit in toolkits:
            if toolkit.version is None and toolkit.nvcc:
                self._nvcc[toolkit.path] = len(requests)
                requests.append(ChildRequest((toolkit.nvcc, "--version"), self.ctx.env, self.budget, "nvcc --version"))
        self._nvcc_batch = ChildBatch(requests, deadline=self.deadline)

    def ldconfig_cache(self) -> dict[str, list[str]]:
        if self._ldconfig is None:
            return {}
        return under_prefix(cache_from_answer(self._ldconfig.answer(0), self.arch), self.ctx)

    def nvcc_version(self, toolkit: Toolkit) -> str | None:
        index = self._nvcc.get(toolkit.path)
        if index is None:
            return None
        answer = self._nvcc_batch.answer(index)
        return None if answer.timed_out else nvcc_version_in(answer.stdout)

    def finish(self) -> None:
        """Wait for the helpers' end (each is killed at the deadline, with all it started)."""
        if self._ldconfig is not None:
            self._ldconfig.answers()
        self._nvcc_batch.answers()


def _loader_pick_is_loadable(soname: str, ctx: SearchContext, cache: dict[str, list[str]]) -> bool:
    picked = resolve_like_loader(soname, [], ctx, cache)
    return picked is None or is_regular_file(picked)


def _host() -> Host:
    from cudnn_doctor.elf import host_arch, uname

    system, node, _machine = uname()
    return Host(os=system.lower(), arch=host_arch(), python=".".join(map(str, sys.version_info[:3])),
                hostname=node)  # uname's nodename, as socket.gethostname() gives


def _finish_toolkit(toolkit: Toolkit, cudart_answer: LibraryProbe | None, nvcc_version: str | None) -> Toolkit:
    runtime = runtime_version(cudart_answer) if cudart_answer is not None else None
    error = None
    if cudart_answer is not None and not cudart_answer.loaded:
        error = cudart_answer.error
    version, version_from = toolkit.version, toolkit.version_from
    if version is None and toolkit.nvcc:
        version, version_from = nvcc_version, "nvcc"
    if version is None and runtime:
        version, version_from = runtime, "cudart"
    return replace(toolkit, version=version, version_from=version_from if version else None,
                   runtime_version=runtime, cudart_error=error)


def _mark_loaded_by(installs: list[CudnnInstall], real_path: str, loader: str) -> list[CudnnInstall]:
    marked = []
    for install in installs:
        if os.path.realpath(install.library) == real_path and loader not in install.loaded_by:
            install = replace(install, loaded_by=install.loaded_by + (loader,))
        marked.append(install)
    return marked

