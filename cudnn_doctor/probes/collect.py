"""Run every probe and put their answers into one Report.

The children that take longest (NVML, each library) start first, and the file
system is scanned while they run.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from cudnn_doctor import __version__
from cudnn_doctor.child import (
    ChildAnswer,
    ChildBatch,
    ChildRequest,
    deadline_in,
    helper_request,
    helper_trouble,
    timeout_from_env,
)
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.model import CudnnInstall, Framework, Host, LibraryProbe, ObservedLoad, Report, Tool, Toolkit
from cudnn_doctor.probes import cudnn as cudnn_probe
from cudnn_doctor.probes.context import SearchContext
from cudnn_doctor.probes.driver import NVML_JOB, NVML_NOT_FOUND, read_driver
from cudnn_doctor.probes.frameworks import detect_frameworks, link_frameworks_to_installs, theano_flags
from cudnn_doctor.probes.library_jobs import Job, ProbeBatch, changed_process, run_jobs
from cudnn_doctor.probes.loader import (
    HELPER_BUDGET_S,
    StartedNvml,
    cache_from_answer,
    find_nvml,
    loader_search_dirs,
    may_load,
    resolve_like_loader,
    start_ldconfig,
    start_nvml,
    under_prefix,
    waiting_batch_for,
)
from cudnn_doctor.probes.platform import detect_platform, libcuda_target
from cudnn_doctor.probes.process_env import (
    context_said,
    cuda_job,
    early_reasons,
    read_process_view,
    reasons_to_ask_cuda,
    visible_from_nvml,
)
from cudnn_doctor.probes.toolkit import discover_toolkits, nvcc_version_in, runtime_version
from cudnn_doctor.user_files import is_regular_file
from cudnn_doctor.variables import preload_entries

MAX_CONTEXT_ALONE = 16  # CUDA variables a refused context is made again without, each alone, side by side


def _one_that_makes_it(names: list[str], made: Callable[[list[str]], bool]) -> tuple[str, ...]:
    """Of NAMES (the context is made without all of them), the one without which alone MADE says it is made, found
    by halving (a child a step: 2,000 CUDA variables were 2,001 children, past a minute); () where no one alone does
    (two that refuse it together: the rule then names them all, and --deep tells)."""
    from cudnn_doctor.halving import smallest_group

    group = smallest_group(names, made)
    return (group[0],) if len(group) == 1 else ()


def collect_report(ctx: SearchContext, sublibraries: dict[int, list[str]], project_dir: str | None = None,
                   deep: bool = False, while_children_run: Callable[[list[Framework]], object] | None = None,
                   progress: Callable[[str], None] | None = None,
                   started_nvml: StartedNvml | None = None) -> Report:
    """Everything the probes can see, as plain data; no judgement. WHILE_CHILDREN_RUN, the caller's own work
    (check loads its rules, plan and renderer there; it is given the frameworks found), is done once the file
    system is read, while the children (each library, NVML, CUDA) still answer: a core would otherwise wait idle
    for them, and that work would come after the last answer. PROGRESS, where given, is
    told in words what is being waited for (the command shows it on a terminal). STARTED_NVML: NVML's child, started by the
    caller for CTX before this module was imported (start_nvml); started here otherwise."""
    from cudnn_doctor.probes.library_jobs import probe_timeout

    say = progress or (lambda _text: None)
    say("reading the driver, CUDA toolkits, cuDNN copies and frameworks")

    probe_timeout()  # a time limit set wrong is said now, before any child starts (its threads would lose it)
    timeout_from_env("CUDNN_DOCTOR_HELPER_TIMEOUT", HELPER_BUDGET_S)
    started = time.perf_counter()
    # On a GPU machine NVML's child costs as much as every other probe together (it opens the driver, as
    # nvidia-smi does): it starts first, wherever the loader may find libnvidia-ml, and runs beside the rest.
    nvml_batch = (started_nvml if started_nvml is not None and started_nvml.ctx is ctx else start_nvml(ctx)).batch
    # CUDA itself (cuInit, 0.2 s a GPU) beside it, where the environment alone already says it must be asked, in a
    # child holding the descriptors a program started here holds (limits.hold_environment)
    from cudnn_doctor.limits import hold_environment

    held_env = hold_environment(ctx.env)
    early_cuda = ProbeBatch([cuda_job(ctx.env)], env=held_env) if ctx.prefix == "/" and early_reasons(ctx, deep) and (
        preload_entries(ctx.env) or may_load(ctx.layout.libcuda, ctx)) else None
    # Helper programs (ldconfig, each nvcc that must be asked) run side by side under one budget, through
    # the child runner: a hanging one costs the budget once, and none outlives check. ldconfig first: its
    # answer is waited for soonest (the loader's cache), while the toolkits are looked for.
    helpers = HelperRuns(ctx)
    bugs: list[tuple[str, str]] = []  # a probe that raised (a bug of ours): one finding each, the rest stands
    toolkits, dangling_variables = _guarded(bugs, "toolkit", lambda: discover_toolkits(ctx), ([], []))
    # each toolkit's libcudart is asked in the cuDNN copies' batch (one Python for them all: library_jobs)
    cudart_jobs = {tk.path: Job("cudart", tk.cudart) for tk in toolkits if tk.cudart and is_regular_file(tk.cudart)}
    helpers.ask_nvcc(toolkits)
    cache = helpers.ldconfig_cache()
    # No libnvidia-ml where the loader looks (LD_LIBRARY_PATH, its cache, the system folders): no driver,
    # and no need to hear NVML say so. The loader's exact answer decides whether NVML's child is read.
    nvml_present = find_nvml(ctx, cache) is not None
    if nvml_batch is not None and not nvml_present:
        nvml_batch.stop()
        nvml_batch = None
    elif nvml_batch is None and nvml_present:
        nvml_batch = ProbeBatch([NVML_JOB], env=ctx.env)
    # the cuDNN copies (and each toolkit's libcudart), loaded in the batch's child as soon as the loader's cache and
    # the toolkits say which: its answer is the one the command's thread waits for last on a machine NVML answers
    # quickly; what is read of the files meanwhile needs nothing of it
    libraries = _guarded(bugs, "cudnn", lambda: cudnn_probe.discover_cudnn_libraries(ctx, toolkits, cache), [])
    majors = sorted({m for m in (cudnn_probe.library_major(lib) for lib, _, _ in libraries) if m})

    # a FIFO or device is never handed to the loader: it would wait on it until the deadline
    library_jobs = {lib: Job("cudnn", lib) for lib, _, _ in libraries if cudnn_probe.probe_target(lib)}
    loader_jobs = {major: Job("cudnn", ctx.layout.cudnn.format(major=major)) for major in majors
                   if _loader_pick_is_loadable(ctx.layout.cudnn.format(major=major), ctx, cache)}
    batch = ProbeBatch([*cudart_jobs.values(), *library_jobs.values(), *loader_jobs.values()], env=ctx.env,
                       waiting=waiting_batch_for(ctx))  # the entry's batch child, up since then, where it can take them
    # what a program started here gets from CUDA (cuInit, the GPUs left visible): asked beside NVML
    asked = reasons_to_ask_cuda(ctx, cache, always=deep)
    target = libcuda_target(ctx, cache)  # the soname, but under a prefix what only its cache or folders find
    cuda_question = cuda_job(ctx.env, target)
    if early_cuda is not None and (not asked or cuda_question != cuda_job(ctx.env)):
        early_cuda.stop()
        early_cuda = None
    cuda_batch = early_cuda or ProbeBatch([cuda_question] if asked else [], env=held_env)
    report = Report(tool=Tool("cudnn-doctor", __version__), host=replace(_host(), platform=detect_platform(ctx, cache)))

    for path in ctx.search_paths:
        if not os.path.exists(path):
            report.search_errors.append((path, "no such folder"))
        elif not os.path.isdir(path):
            report.search_errors.append((path, "not a folder"))
        elif not os.access(path, os.R_OK | os.X_OK):
            report.search_errors.append((path, "permission denied: the folder cannot be read"))

    report.doctor_bugs = bugs
    _guarded(bugs, "theano_flags", lambda: theano_flags(ctx, report.unreadable_files), None)  # what cannot be read
    report.loader_path = loader_search_dirs(ctx, cache)
    report.loader_path_real = [os.path.realpath(folder) for folder in report.loader_path]
    report.ld_library_path = ctx.library_path()
    report.ld_library_path_real = [os.path.realpath(folder) for folder in report.ld_library_path]
    report.variable_folders = {**{name: ctx.env[name].split(os.pathsep) for name in ("PATH", "PYTHONPATH")
                                  if ctx.env.get(name)},
                               ctx.layout.library_path_variable: list(report.ld_library_path)}
    report.dangling_variables = dangling_variables
    scanned = time.perf_counter()

    frameworks = _guarded(bugs, "frameworks", lambda: detect_frameworks(ctx, project_dir), [])
    frameworks_done = time.perf_counter()
    deep_imports = None
    if deep:  # the import children (seconds each: --deep's longest wait) start as soon as the frameworks are known,
        # before the other children of this check, and run beside them, all at once
        from cudnn_doctor.probes.deep import DeepImports

        deep_imports = DeepImports(frameworks, ctx.env)
        names = ", ".join(dict.fromkeys(f.name for f in frameworks))
        say(f"--deep: {names}: each one's first GPU steps in a child of its own" if names else
            "--deep: no framework found to run; reading the driver, CUDA and cuDNN")
    # cuDNN as each framework's own loading code loads it, and as the loader by name gives it: children beside the rest
    from cudnn_doctor.probes.library_jobs import probe_timeout

    # (seconds on a GPU machine: cuDNN's libraries register their kernels as they load), so only where the
    # environment can change which copy loads (LD_PRELOAD, a cuDNN on LD_LIBRARY_PATH) or, below, where the files
    # show a problem in a framework's copy: what is only read is then proven or refuted (under --deep the
    # frameworks themselves run, which is the proof)
    from cudnn_doctor.probes.loading import LoadChildren, broken_in_own_wheels, cuda_libraries_on_path

    # and the CUDA libraries other than cuDNN, where LD_LIBRARY_PATH or LD_PRELOAD holds one, or where a framework's
    # own wheel holds a file the loader cannot use: the frameworks' own preloading code then runs in those children,
    # and each such library is opened as their libraries open it
    cuda_libraries = _guarded(bugs, "loading", lambda: cuda_libraries_on_path(ctx.env, ctx.searched_library_path()), ())
    cuda_libraries += tuple(name for name in _guarded(bugs, "loading", lambda: broken_in_own_wheels(frameworks, ctx.env, ctx.cwd), ())
                            if name not in cuda_libraries)

    def start_loading() -> LoadChildren:
        return LoadChildren(frameworks, dict(ctx.env), ctx, probe_timeout(),
                            loader_too=bool(majors) and (ctx.prefix == "/" or "LD_LIBRARY_PATH" in ctx.env),
                            libraries=cuda_libraries)

    loading = start_loading() if preload_entries(ctx.env) or _cudnn_on_library_path(ctx) or \
        _cudnn_on_python_path(ctx.env) or cuda_libraries else None
    from cudnn_doctor.probes.xla_flags import XlaFlagsChild

    xla_child = XlaFlagsChild(frameworks, ctx.env)  # starts nothing unless XLA_FLAGS is set and JAX installed
    from cudnn_doctor.probes.start_cost import PreloadStartCost

    # a preload no row knows: one bare start with it and one without, side by side (nothing where none is set)
    start_cost = _guarded(bugs, "start_cost", lambda: PreloadStartCost(ctx.env), None)
    from cudnn_doctor.probes.first_use import XlaCompilerSearch
    from cudnn_doctor.probes.ptxas import PtxasChild, path_ptxas

    # XLA's own search for its compiler tools and libdevice, each ptxas asked --version as XLA asks it (JAX installed),
    # PATH's first ptxas among them in any case: its one answer serves the search and the ptxas probe
    xla_search = _guarded(bugs, "first_use", lambda: XlaCompilerSearch(
        frameworks, ctx.env, ctx.system, ctx.cwd, also=path_ptxas(ctx.env, frameworks)), None)
    ptxas_child = PtxasChild(ctx.env, frameworks, toolkits, xla_search)  # the ptxas XLA compiles with, its release
    # the frameworks' Python asked, each question only where its gate opens, all of them in one start per interpreter
    from cudnn_doctor.probes.cpu_kernels import CpuKernelQuestion
    from cudnn_doctor.probes.framework_python import PythonChildren
    from cudnn_doctor.probes.python_finder import FinderQuestion
    from cudnn_doctor.probes.python_start import StartQuestion

    python_start = StartQuestion(frameworks, ctx.env)  # its start-up, where PYTHON* is set or a hook may load a library
    cpu_kernels = CpuKernelQuestion(frameworks, ctx.env)  # numpy, only where a CPU-kernel variable is set
    finder = _guarded(bugs, "python_finder", lambda: FinderQuestion(frameworks, ctx.env), None)  # where it can matter
    from cudnn_doctor.probes.visible_devices import TorchVisibleQuestion

    # torch's own count of the GPUs CUDA_VISIBLE_DEVICES selects, where it may differ from CUDA's
    torch_visible = _guarded(bugs, "visible_devices", lambda: TorchVisibleQuestion(frameworks, ctx.env), None)
    pythons = PythonChildren(ctx.env, [q for q in (python_start, finder, cpu_kernels, torch_visible) if q is not None])

    # issue 42: the libnccl each framework loads, its version asked in a child beside the other probes
    from cudnn_doctor.probes.nccl import NcclProbe

    nccl_probe = NcclProbe(frameworks, ctx, cache) if nvml_batch is not None else None
    if while_children_run is not None:
        while_children_run(frameworks)

    answers = batch.results()
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
    cuda = cuda_batch.results().get(cuda_question)
    if cuda is None and not nvml.values.get("ok") and resolve_like_loader(ctx.layout.libcuda, [], ctx, cache):
        asked = ["NVML did not answer"]  # the driver's release then comes from libcuda itself
        cuda = run_jobs([cuda_question], env=held_env)[cuda_question]
    report.driver, report.gpus, report.nvml_error = read_driver(nvml, cuda)
    allreduce = None
    if deep and report.gpus:  # issue 42: the all-reduce starts now, beside the imports, over the GPUs CUDA lists
        from cudnn_doctor.probes.nccl import start_allreduce

        devices = cuda.values.get("devices") if cuda is not None and cuda.loaded and cuda.values.get("cuInit") == 0 \
            else None
        allreduce = start_allreduce(report.frameworks, len(devices) if isinstance(devices, list) else len(report.gpus))
    if cuda is None and len({(g.name, g.compute_capability) for g in report.gpus}) > 1 \
            and "CUDA_DEVICE_ORDER" not in ctx.env and resolve_like_loader("libcuda.so.1", [], ctx, cache):
        asked = ["GPUs of different kinds: CUDA numbers them fastest first, nvidia-smi by PCI bus"]
        cuda = run_jobs([cuda_question], env=held_env)[cuda_question]
    if cuda is None and _fabric_not_ready(nvml) and resolve_like_loader("libcuda.so.1", [], ctx, cache):
        asked = ["NVML reports the NVSwitch fabric not ready: only cuInit can say whether CUDA starts"]  # issue 42
        cuda = run_jobs([cuda_question], env=held_env)[cuda_question]
    from_nvml = None
    visible_devices = ctx.env.get("CUDA_VISIBLE_DEVICES")
    if cuda is None and visible_devices is not None and resolve_like_loader("libcuda.so.1", [], ctx, cache):
        # indices or whole UUIDs (Slurm sets indices): NVML's GPUs in the order named, without cuInit; anything NVML cannot
        # answer for (an index it has no GPU for, several kinds, MIG) is CUDA's to say
        from_nvml = visible_from_nvml(visible_devices, report.gpus, ctx.env)
        if from_nvml is None:
            asked = ["CUDA_VISIBLE_DEVICES is set, and NVML's GPUs alone cannot say what it leaves"]
            cuda = run_jobs([cuda_question], env=held_env)[cuda_question]
    cuinit_held = None
    if cuda is not None and held_env is not ctx.env and cuda.loaded and cuda.values.get("cuInit") not in (0, None):
        # cuInit failed holding the descriptors: asked once more without them, the one difference
        without = run_jobs([cuda_question], env=ctx.env)[cuda_question]
        if without.loaded and without.values.get("cuInit") == 0:
            from cudnn_doctor.probes.process_env import status_name

            status = cuda.values.get("cuInit")
            cuinit_held = str(cuda.values.get("cuInit_name") or status_name(status) or f"CUDA error {status}")
            cuda = without
    versions = {os.path.realpath(i.library): i.version for i in report.cudnn}
    report.process = _guarded(bugs, "process_env", lambda: read_process_view(
        ctx, cuda, report.gpus, report.frameworks, versions, cache, asked, from_nvml,
        loading.results() if loading is not None else ()), None)
    if loading is None and report.process is not None and (any(
            sub.problem for copy in report.process.cudnn for sub in copy.sublibraries)
            or another_release_than_built(report.frameworks, report.cudnn)):
        report.process = _guarded(bugs, "process_env", lambda: read_process_view(
            ctx, cuda, report.gpus, report.frameworks, versions, cache, asked, from_nvml,
            start_loading().results()), None)
    if report.process is not None and cuinit_held:
        report.process = dataclasses.replace(report.process, cuinit_held=cuinit_held)
    if report.process is not None and report.process.context not in (None, "ok") and report.process.context_variables:
        # refused: made again without the CUDA variables that had it made, the one difference (a GPU whose memory
        # another process holds refuses it either way, and no variable is then the cause); where that left out more
        # than one, each is also left out alone, side by side, to name the one that makes the difference
        from cudnn_doctor.knowledge.environment import context_retry_unset

        unset = context_retry_unset(ctx.env, report.process.context_variables)

        def made_without(names: list[str]) -> ProbeBatch:
            left_out = set(names)  # a set: 20,000 names searched as a list for each variable took 17 s of check
            return ProbeBatch([cuda_question], env={k: v for k, v in held_env.items() if k not in left_out})

        def answer_of(batch: ProbeBatch) -> str | None:
            answer = batch.results()[cuda_question]
            return context_said(answer.values.get("context")) if answer.loaded else (answer.error or "no answer")

        few = 1 < len(unset) <= MAX_CONTEXT_ALONE  # each alone, side by side; more: halved, one child at a time
        tries = {name: made_without(names) for name, names in [("", unset)] + ([(n, [n]) for n in unset] if few else [])}
        said = {name: answer_of(batch) for name, batch in tries.items()}
        alone = tuple(name for name in unset if said.get(name) == "ok")
        if said[""] == "ok" and len(unset) > MAX_CONTEXT_ALONE:
            alone = _one_that_makes_it(unset, lambda names: answer_of(made_without(names)) == "ok")
        report.process = dataclasses.replace(report.process, context_without=said[""], context_without_unset=tuple(
            unset), context_blamed=alone if said[""] == "ok" and alone else tuple(unset) if said[""] == "ok" else ())
    xla = xla_child.result()
    preload_start, preload_takes = _guarded(bugs, "start_cost", start_cost.result, (None, ())) \
        if start_cost is not None else (None, ())
    if report.process is not None and preload_start is not None:
        report.process = dataclasses.replace(report.process, preload_start=preload_start, preload_takes=preload_takes)
    if report.process is not None:  # the ptxas XLA compiles with, and the release it said it is
        ptxas, release = _guarded(bugs, "ptxas", ptxas_child.result, (None, None))
        if ptxas:
            report.process = dataclasses.replace(report.process, ptxas=ptxas, ptxas_release=release)
    xla_compiler = _guarded(bugs, "first_use", lambda: xla_search.result(
        report.process.ptxas if report.process is not None else None), None) if xla_search is not None else None
    from cudnn_doctor.probes.first_use import first_use, nvrtc_builtins

    nvrtc = _guarded(bugs, "first_use", lambda: nvrtc_builtins(
        report.frameworks, report.process.loads if report.process is not None else (), ctx.env,
        ctx.default_lib_dirs(), cache), ())
    report.first_use = first_use(xla_compiler, nvrtc)
    python_answers = _guarded(bugs, "framework_python", pythons.answers, {})  # each interpreter's answers
    trials = _guarded(bugs, "framework_python", pythons.trials, {})  # where one failed: each variable unset alone
    refused = _guarded(bugs, "python_start", lambda: python_start.result(python_answers, trials), ())
    numpy_refused = _guarded(bugs, "cpu_kernels", lambda: cpu_kernels.result(python_answers, trials), ())
    if report.process is not None and numpy_refused:
        report.process = dataclasses.replace(report.process, cpu_kernels=numpy_refused)
    if report.process is not None and refused:
        report.process = dataclasses.replace(report.process, python_refused=refused)
    counted = _guarded(bugs, "visible_devices", lambda: torch_visible.result(python_answers), None) \
        if torch_visible is not None else None
    if report.process is not None and counted is not None:
        report.process = dataclasses.replace(report.process, torch_visible=counted)
    if report.process is not None and finder is not None:  # what the frameworks' Python finds, as it answered
        unloadable = _guarded(bugs, "python_finder", lambda: finder.plugins(python_answers), ())
        found = _guarded(bugs, "python_finder", lambda: finder.shadows(python_answers, ctx.env, ctx.cwd), ())
        # what Python answered takes the place of what the files showed of the same copy (it says more: seen, and
        # whether that copy was built for this Python); a copy the files showed elsewhere stays beside it
        answered = {(s[0], s[1], s[2], s[3]): s for s in found}
        kept = tuple(answered.pop((s[0], s[1], s[2], s[3]), s) for s in report.process.python_shadows)
        known = {(shadow[1], shadow[2]) for shadow in kept}
        report.process = dataclasses.replace(report.process, python_plugins=unloadable, python_shadows=(
            *kept, *(s for s in answered.values() if (s[1], s[2]) not in known)))
    from cudnn_doctor.probes.python_start import framework_imports

    imports = _guarded(bugs, "python_start", lambda: framework_imports(
        report.frameworks, python_start.resolved(python_answers), python_start.lost(python_answers, trials)), ())
    if report.process is not None and imports:  # where a program's `import torch` finds it, Python's own answer
        report.process = dataclasses.replace(report.process, python_imports=imports)
    preloaded = _guarded(bugs, "python_start", lambda: python_start.preloaded(python_answers), ())
    if report.process is not None and preloaded:  # what start-up hooks loaded, per framework of that Python
        from cudnn_doctor.probes.context import interpreter_for

        by_python = [(f.name, interpreter_for(str(f.details.get("site_packages") or ""))) for f in report.frameworks
                     if f.details.get("site_packages")]
        from cudnn_doctor.probes.process_env import hook_preloads

        report.process = dataclasses.replace(report.process, python_preloaded=hook_preloads(
            [(name, library, hooks) for python, library, hooks in preloaded for name, its in by_python if its == python],
            report.frameworks, versions, report.variable_folders.get("PYTHONPATH", [])))
    if report.process is not None and xla is not None:  # jaxlib's own parse outweighs its libraries' strings
        report.process = dataclasses.replace(report.process, xla_flags_unknown=xla.refused, xla_flags_said=xla.said)
    if report.process is not None and report.process.loads:  # what a child saw a framework map is what it uses
        report.frameworks, report.cudnn = seen_frameworks(report.frameworks, report.cudnn, report.process.loads)
    library = nvml.values.get("library") if not nvml.values.get("ok") else None
    if not library and not nvml.values.get("ok") and "not found" in str(nvml.values.get("error") or "").lower():
        # the loader refused the first libnvidia-ml.so.1 (empty, foreign, cut short): the one the path names first
        library = next((os.path.join(folder, "libnvidia-ml.so.1") for folder in ctx.library_path()
                        if os.path.lexists(os.path.join(folder, "libnvidia-ml.so.1"))), None)
    fifo = None
    if not library and not nvml.values.get("ok") and nvml.timed_out:  # a FIFO first on the path: the loader waits
        from cudnn_doctor.probes.process_env import fifo_first

        library = fifo = fifo_first(ctx, "libnvidia-ml.so.1")
    died = None
    if not library and not nvml.values.get("ok") and (nvml.crashed or nvml.timed_out):
        # the child ended or hung before NVML answered: the libnvidia-ml.so.1 the loader takes first, named
        library = resolve_like_loader("libnvidia-ml.so.1", [], ctx, cache)
        died = nvml.error or "ended before NVML answered"
    if not library and nvml.values.get("error_class") == "LoaderRefused":  # the file the loader refused, named
        library = resolve_like_loader("libnvidia-ml.so.1", [], ctx, cache)
    # what loading NVML (and nvmlInit) took from the child's process, whatever NVML answered: the file it loaded
    taken = changed_process(nvml.values) if nvml.loaded else ()
    if taken and not library:
        library = nvml.values.get("library") or resolve_like_loader("libnvidia-ml.so.1", [], ctx, cache)
    if report.process is not None and isinstance(library, str) and library:  # NVML refused: which file, and how
        from cudnn_doctor.probes.origin import origin

        report.process.nvml_library, report.process.nvml_error = library, report.nvml_error or died
        report.process.nvml_changed = taken
        report.process.nvml_fifo = fifo is not None
        report.process.nvml_died = died
        from cudnn_doctor.versions import release_in_file_name

        report.process.nvml_release = release_in_file_name(os.path.basename(os.path.realpath(library)))
        report.process.nvml_via, report.process.nvml_entry = origin(library, "libnvidia-ml.so.1", ctx)
        report.process.nvml_stub = _says_stub(library)
    # --- several GPUs and NCCL (issue 42): links, NCCL's library and settings, /dev/shm; --deep: the all-reduce
    from cudnn_doctor.probes.nccl import read_multi_gpu

    report.multi_gpu = read_multi_gpu(nvml.values if nvml.loaded else {}, report.gpus, nccl_probe, ctx,
                                      report.process.cuinit if report.process else None)
    if report.multi_gpu is not None and cuda is not None and cuda.loaded and report.process and report.process.visible:
        from cudnn_doctor.probes.nccl import with_peer_access

        with_peer_access(report.multi_gpu, cuda.values.get("peer_access") or {},
                         {v.ordinal: v.nvml_index for v in report.process.visible})
    # --- end of issue 42's part
    helpers.finish()
    report.helper_troubles = list(helpers.troubles)
    if deep_imports is not None:
        from cudnn_doctor.probes.deep import confirm_frameworks

        if names:
            say(f"--deep: waiting for {names} (at most {deep_imports.timeout:g} s, CUDNN_DOCTOR_DEEP_TIMEOUT)")

        report.frameworks, report.cudnn = confirm_frameworks(report.frameworks, report.cudnn, deep_imports)
    if allreduce is not None and report.multi_gpu is not None:  # issue 42: read after the imports, run beside them
        report.multi_gpu.allreduce = allreduce.result(report.multi_gpu.pairs)
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


def _guarded(bugs: list[tuple[str, str]], probe: str, call: Callable[[], Any], fallback: Any) -> Any:
    """CALL's answer; where it raises (a bug of ours, not the machine's: a DoctorError is the user's and goes on),
    FALLBACK, and the probe and its error kept in BUGS for the rules to report (CD902)."""
    from cudnn_doctor.limits import limit_stopped

    try:
        return call()
    except DoctorError:
        raise
    except Exception as error:
        if limit_stopped(error) is not None:  # a limit of this process, not a bug: the runner says which one
            raise
        bugs.append((probe, f"{type(error).__name__}: {error}"))
        return fallback


class HelperRuns:
    """`ldconfig -p` (started at once, or already at the command's entry: probes/loader.start_ldconfig) and `nvcc
    --version` of each toolkit whose files name no version (once the toolkits are found), side by side, each under
    the helpers' budget (CUDNN_DOCTOR_HELPER_TIMEOUT seconds, 10 by default)."""

    def __init__(self, ctx: SearchContext) -> None:
        self.budget = timeout_from_env("CUDNN_DOCTOR_HELPER_TIMEOUT", HELPER_BUDGET_S)
        self.deadline = deadline_in(self.budget)
        self.arch = ctx.arch
        self.ctx = ctx
        self._ldconfig = start_ldconfig(ctx)
        self._nvcc: dict[str, int] = {}
        self._nvcc_batch = ChildBatch([])
        self.troubles: list[tuple[str, str]] = []  # (a helper's command, what it did: child.helper_trouble), CD213

    def ask_nvcc(self, toolkits: list[Toolkit]) -> None:
        """Start `nvcc --version` of each of TOOLKITS whose files name no version, under the same deadline, read as a
        build reads it (child.helper_request: to its end; what it leaves holding its output is said)."""
        requests: list[ChildRequest] = []
        for toolkit in toolkits:
            if toolkit.version is None and toolkit.nvcc:
                self._nvcc[toolkit.path] = len(requests)
                requests.append(helper_request((toolkit.nvcc, "--version"), self.ctx.env, f"{toolkit.nvcc} --version",
                                               self.budget))
        self._nvcc_batch = ChildBatch(requests, deadline=self.deadline)

    def ldconfig_cache(self) -> dict[str, list[str]]:
        if self._ldconfig is None:
            return {}
        answer = self._ldconfig.answer(0)
        self._said("ldconfig -p", answer)
        return under_prefix(cache_from_answer(answer, self.arch), self.ctx)

    def nvcc_version(self, toolkit: Toolkit) -> str | None:
        index = self._nvcc.get(toolkit.path)
        if index is None:
            return None
        answer = self._nvcc_batch.answer(index)
        self._said(f"{toolkit.nvcc} --version", answer)
        return None if answer.timed_out else nvcc_version_in(answer.stdout)

    def _said(self, command: str, answer: ChildAnswer) -> None:
        trouble = helper_trouble(answer, self.budget)
        if trouble is not None and (command, trouble) not in self.troubles:
            self.troubles.append((command, trouble))

    def finish(self) -> None:
        """Wait for the helpers' end (each is killed at the deadline, with all it started)."""
        if self._ldconfig is not None:
            self._ldconfig.answers()
        self._nvcc_batch.answers()


def seen_frameworks(frameworks: list[Framework], installs: list[CudnnInstall], loads: tuple[ObservedLoad, ...]
                    ) -> tuple[list[Framework], list[CudnnInstall]]:
    """Each framework whose own loading code a child ran, with the cuDNN it mapped there as the one it uses (in
    place of the one its files point at), and each copy's loaded_by as the children saw it."""
    out = []
    for framework in frameworks:
        seen = next((load for load in loads if load.user == framework.name and load.front), None)
        if seen is None or seen.front is None:
            out.append(framework)
            continue
        real = os.path.realpath(seen.front)
        match = next((i for i in installs if os.path.realpath(i.library) == real), None)
        installs = [replace(i, loaded_by=tuple(x for x in i.loaded_by if x != framework.name)) for i in installs]
        if match is not None:
            installs = [replace(i, loaded_by=i.loaded_by + (framework.name,)) if os.path.realpath(i.library) == real
                        else i for i in installs]
        out.append(replace(framework, cudnn_used=match.library if match else seen.front))
    return out, installs


def another_release_than_built(frameworks: list[Framework], installs: list[CudnnInstall]) -> bool:
    """Whether the cuDNN a framework's files point at is another release than the one it was built with (its
    cudnn_expected, a release): what its own loading code maps, and the release that answers there, are then asked
    in a child, so that a verdict on that copy stands on what was mapped, not on the files' model (issue 45)."""
    from cudnn_doctor.versions import ascii_digits, version_tuple

    versions = {i.library: i.version for i in installs}
    for framework in frameworks:
        expected, used = framework.cudnn_expected or "", versions.get(framework.cudnn_used or "")
        built = (version_tuple(expected) or ())[:3] if ascii_digits(expected[:1]) else ()
        if used and len(built) >= 2 and built != (version_tuple(used) or ())[:len(built)]:  # "8" alone says too little
            return True
    return False


def _cudnn_on_library_path(ctx: SearchContext) -> bool:
    """Does a folder of LD_LIBRARY_PATH hold a libcudnn file (which can change the copy a framework's cuDNN loads)?"""
    from cudnn_doctor.knowledge.data import load

    # every library cuDNN opens, its front's checks and the engines its graph library opens when work runs
    data = [(int(row["major"]), (row["front"], *row["loads"], *row["later"]))
            for row in load("process_env").get("version_check", [])]
    names = ("libcudnn.so", *(f"libcudnn{part}.so.{major}" for major in (8, 9, 10) for part in
                                ("", "_graph", "_ops", "_cnn", "_adv", "_ops_infer", "_cnn_infer")),
             *(f"{name}.so.{major}" for major, row in data for name in row))
    return any(os.path.lexists(os.path.join(folder, name)) for folder in ctx.searched_library_path()
               for name in names)


def _cudnn_on_python_path(env: dict[str, str]) -> bool:
    """Does a PYTHONPATH folder hold the pip wheels' layout of cuDNN (nvidia/cudnn/lib/libcudnn.so.N)? torch and JAX
    find their cuDNN by searching sys.path for it, and a program's PYTHONPATH comes before site-packages: which copy
    they load is then asked of their own loading code (round nine: torch loaded a second tree's 9.14 so)."""
    entries = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry][:64]
    return any(os.path.lexists(os.path.join(entry, "nvidia", "cudnn", "lib", f"libcudnn.so.{major}"))
               for entry in entries for major in (8, 9, 10))


STUB_NOTICE = b"is a stub library"  # NVIDIA's notice inside the toolkit's libnvidia-ml.so link stub


def _says_stub(path: str) -> bool:
    """Does the library at PATH carry NVIDIA's link-stub notice? (the stub is some 100 kB; a driver's NVML is 2 MB+)"""
    from cudnn_doctor.user_files import UnreadableFile, read_user_file

    try:
        return STUB_NOTICE in read_user_file(path, 1 << 20)
    except UnreadableFile:
        return False


def _fabric_not_ready(nvml: LibraryProbe) -> bool:
    """Whether NVML's answer has a GPU whose NVSwitch fabric is not started or still in progress (issue 42)."""
    gpus = nvml.values.get("gpus") if nvml.loaded and nvml.values.get("ok") else None
    return any(isinstance(g, dict) and isinstance(g.get("links"), dict) and isinstance(g["links"].get("fabric"), dict)
               and g["links"]["fabric"].get("state") in (1, 2) for g in gpus or [])


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

