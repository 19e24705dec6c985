"""The treatments of what a program gets in this environment (rules/process_env.py's findings): each is the
exact change to this shell's environment (a variable unset or corrected, a folder taken out of
LD_LIBRARY_PATH, an entry out of LD_PRELOAD, a soft limit raised where the hard limit allows), or a step only
the user can take (a site's hard limit, another user's process). Nothing is ever installed for them."""

from __future__ import annotations

import os
from typing import Any

from cudnn_doctor.knowledge.data import load
from cudnn_doctor.model import Finding, LoadedCudnn, Report
from cudnn_doctor.plan.actions import ENV, MANUAL, PIP, Action, EnvChange
from cudnn_doctor.versions import ascii_digits

LOADER_SOURCE = "ld.so(8): LD_LIBRARY_PATH is searched first, LD_PRELOAD is loaded into every program"
# what a change of each part of the environment the bisection tries does (doctor/bisect.py's kinds): the source of
# a line that part's change was seen to cure
SAFE_PATH_SOURCE = ("Python: PYTHONSAFEPATH, 'Don't prepend a potentially unsafe path to sys.path' (the working "
                    "folder for -c and the REPL, a script's own folder; Python 3.11 and later) "
                    "(https://docs.python.org/3/using/cmdline.html#envvar-PYTHONSAFEPATH)")
CURE_SOURCES = {
    "preload": "ld.so(8): LD_PRELOAD's libraries are loaded into every program, before all others",
    "library_path": LOADER_SOURCE,
    "loader": LOADER_SOURCE,
    "path": "execvp(3): the first program of a name on PATH is the one run (XLA runs the ptxas on PATH first)",
    "pythonpath": "Python: the module search path (sys.path): PYTHONPATH's folders come before site-packages",
    "limits": "getrlimit(2): a soft limit may be raised up to the hard one, by the process itself (ulimit -S)",
    "working_folder": SAFE_PATH_SOURCE,
    "descriptors": "execve(2): descriptors open without close-on-exec pass to every program the shell starts; "
                   "getrlimit(2) RLIMIT_NOFILE bounds a descriptor's number, inherited ones included",
    "shell": "execve(2): the umask and the signals a shell leaves ignored pass to every program it starts; umask(2), "
             "signal(7)",
    "variable": "seen here: the failing frameworks ran in a child started without this one variable, the rest of the "
                "environment as it is (the environment bisected part by part)",
}
XLA_PTXAS_SOURCE = "openxla/xla tsl/platform/default/cuda_root_path.cc: PreferPtxasFromPath() (the ptxas on PATH first)"
CUDA_ENV_SOURCE = ("CUDA C++ Programming Guide, 'CUDA Environment Variables' "
                   "(https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#cuda-environment-variables)")


def treat(work: Any) -> None:
    """Every finding of the process environment that has an exact treatment, taken before the others."""
    report: Report = work.report
    view = report.process
    if view is None:
        return
    if view.cured_by is not None:  # --deep saw the frameworks work without one part of this environment: that change
        cure = view.cured_by
        found = [f for f in work.open if f.values.get("cure") == cure.words]
        if found:
            work.take(found, Action(ENV, (), f"{cure.words}: the failing frameworks ran in a child with this change",
                                    CURE_SOURCES.get(cure.kind, CURE_SOURCES["variable"]),
                                    env=tuple(EnvChange(v, op, value) for v, op, value in cure.changes)))
    for finding in work.with_code("CD111", "CD112"):
        _driver_library(work, finding, report)
    for finding in work.with_code("CD110"):
        entry = str(finding.values.get("entry") or "")
        if entry and (finding.subject == "libcuda.so.1" or os.path.basename(str(finding.subject)) == "libcuda.so.1"):
            fault = str(finding.values.get("fault") or "is not one the loader can load")
            work.take([finding], Action(ENV, (), f"{entry} out of LD_LIBRARY_PATH: its libcuda.so.1 {fault}, and the "
                                                 "driver's own comes after it",
                                        LOADER_SOURCE, env=(EnvChange("LD_LIBRARY_PATH", "remove", entry),)))
    for finding in work.with_code("CD118"):
        _nvml_library(work, finding, report)
    for finding in work.with_code("CD113", "CD114"):
        _visible_devices(work, finding, report)
    for finding in work.with_code("CD317"):
        if _hook_folders_out(work, finding, "cuDNN"):  # the framework loads its own again
            continue
        loaded = next((c for c in view.cudnn if c.library == finding.subject and c.entry), None)
        if loaded is not None:
            drop_preload(work, [finding], loaded.entry or "", report, f"{finding.subject} is preloaded into every "
                          "program, in place of each framework's own cuDNN")
        elif finding.subject in view.preload:  # a sub-library preloaded (rules.process_env.preloaded_cudnn_sublibrary)
            drop_preload(work, [finding], str(finding.subject), report, f"{finding.subject} is preloaded into every "
                          "program, in place of that sub-library of each framework's own cuDNN")
    # (CD410 here: a PYTHONPATH copy built for another Python, rules.process_env._built_for_another_python)
    for finding in [*work.with_code("CD409", "CD419", "CD421"),
                    *(f for f in work.with_code("CD410") if f.values.get("how") == "PYTHONPATH")]:
        if finding.values.get("runtime_entry"):  # a C++ runtime the loader refuses for the framework's library
            # one that killed the loader mapping it (cut short) kills every C++ library's load alike: the crashes of
            # loading (CD309) go with it
            crashes = work.with_code("CD309") if "was killed by" in str(finding.values.get("error") or "") else []
            _named_by_the_loader(work, finding, report, str(finding.values["runtime_via"]),
                                 str(finding.values["runtime_entry"]), str(finding.values.get("runtime") or ""),
                                 also=crashes)
            continue
        if finding.values.get("working_folder"):  # the working folder's nvidia/*/lib, searched first by python -c
            work.take([finding], Action(ENV, (), "Python then leaves the working folder off sys.path, so the "
                                                 "framework's code finds its own wheels' libraries, not the working "
                                                 "folder's nvidia folder (Python 3.11 and later; or start the program "
                                                 "from another folder, or move that nvidia folder)", SAFE_PATH_SOURCE,
                                        env=(EnvChange("PYTHONSAFEPATH", "set", "1"),)))
            continue
        if finding.values.get("died_opening") and not finding.values.get("entry"):  # a wheel's own file its code dies in
            _wheel_again(work, finding, report)
            continue
        entry = str(finding.values.get("entry") or "")
        if entry and entry in (shadow[0] for shadow in view.python_shadows if shadow[3:4] == ("PYTHONPATH",)):
            work.take([finding], Action(ENV, (), f"{entry} out of PYTHONPATH: the framework then imports what it was "
                                                 "installed with", "Python: the module search path (sys.path)",
                                        env=(EnvChange("PYTHONPATH", "remove", entry),)))
        elif finding.values.get("group"):
            _plugin(work, finding, report)
        elif finding.values.get("cwd_gone"):
            work.take([finding], Action(MANUAL, (), f"the working folder {finding.values['cwd_gone']} was deleted "
                                                    "under this shell: programs started here inherit a folder "
                                                    "without a name", "getcwd(3): ENOENT, the working folder was "
                                                    "unlinked", text="cd ~ (or to any folder that exists), then "
                                                                     "start the program from there"))
        elif finding.values.get("how") == "user site":
            work.take([finding], Action(ENV, (), f"PYTHONNOUSERSITE=1: Python then skips your user site "
                                                 f"{finding.subject}, and imports what was installed with the "
                                                 "framework", "Python: site.ENABLE_USER_SITE (PYTHONNOUSERSITE, "
                                                 "https://docs.python.org/3/library/site.html)",
                                        env=(EnvChange("PYTHONNOUSERSITE", "set", "1"),)))
        elif str(finding.subject).startswith("import "):  # the framework's Python finds another one, or none
            python = str(finding.proof or "").split(" was started", 1)[0]
            work.take([finding], Action(MANUAL, (), f"what the program's Python puts on sys.path before its first line "
                                                    f"decides which {finding.values.get('library')} it imports",
                                        "Python: the site module (https://docs.python.org/3/library/site.html) and "
                                        "the module search path (sys.path)",
                                        text=f"See which start-up hook or setting changes it: {python} -X importtime "
                                             "-c pass, and python -c 'import sys; print(sys.path)' in this shell; "
                                             "take the folder of the sitecustomize, usercustomize or .pth file that "
                                             "does it out of PYTHONPATH, or edit that file"))
        elif not entry and finding.subject in {os.path.join(shadow[0], shadow[1]) for shadow in view.python_shadows
                                               if shadow[3:4] == ("working folder",)}:
            # the working folder: Python puts it first on sys.path (python -c, the REPL, a script kept there) unless
            # PYTHONSAFEPATH is set; a script that imports a module beside it then needs that folder on PYTHONPATH
            work.take([finding], Action(ENV, (), "Python then leaves the working folder off sys.path, so the framework "
                                                 "imports what it was installed with, not the working folder's module "
                                                 "of that name (Python 3.11 and later; a script that imports a module "
                                                 "kept beside it then needs that folder on PYTHONPATH; or rename the "
                                                 "module)", SAFE_PATH_SOURCE,
                                        env=(EnvChange("PYTHONSAFEPATH", "set", "1"),)))
        elif (named := loader_named(str(finding.values.get("error") or ""), report)) is not None:
            _named_by_the_loader(work, finding, report, *named)  # its loading code failed on a file the loader refused
    for finding in work.with_code("CD203"):
        if finding.values.get("wheel"):  # the framework's own wheel's copy refused: its files put back whole
            _wheel_again(work, finding, report)
            continue
        if _hook_folders_out(work, finding, "copy"):
            continue
        from cudnn_doctor.probes.hwcaps import entry_of

        folder = entry_of(os.path.dirname(str(finding.subject)))  # a file in its glibc-hwcaps subfolder: the entry
        if (any(broken[0] == finding.subject for broken in view.broken_cuda) or finding.values.get("via") ==
                "LD_LIBRARY_PATH") and folder in report.ld_library_path:
            work.take([finding], Action(ENV, (), f"{folder} out of LD_LIBRARY_PATH: its {os.path.basename(str(finding.subject))} "
                                                 "is not a library the loader can use", LOADER_SOURCE,
                                        env=(EnvChange("LD_LIBRARY_PATH", "remove", folder),)))
            continue
        if finding.subject in view.preload:
            drop_preload(work, [finding], str(finding.subject), report, f"{finding.subject} is preloaded into every "
                          "program, before the framework's own copy of that library")
    for finding in work.with_code("CD304", "CD305"):  # a sanitizer preloaded intercepts cuDNN's own dlopen
        entry = str(finding.values.get("sanitizer_entry") or "")
        if entry and entry in view.preload:  # its run-time out: its options cannot give cuDNN its RUNPATH back
            drop_preload(work, [finding], entry, report, f"{entry} out of LD_PRELOAD: the sanitizer's run-time is "
                          "then not in every program, and cuDNN loads its sub-libraries from its own folder (preload "
                          "it for the one program you test under the sanitizer)")
    for finding in work.with_code("CD304", "CD305", "CD308", "CD319"):
        _loaded_copy(work, finding, report)
    for finding in work.with_code("CD307"):
        if finding.values.get("sublibrary_file"):
            _loaded_copy(work, finding, report)
    for finding in work.with_code("CD307", "CD308"):  # the loader's words name the file it refused: LD_LIBRARY_PATH or
        if finding.code == "CD308" and finding.values.get("sublibrary_file"):  # LD_PRELOAD gave it (a library cuDNN
            continue  # needs, such as an older libz or libstdc++, in a folder first on the path; a sub-library's file
        named = loader_named(str(finding.values.get("error") or ""), report)  # is its copy's, treated above)
        if named is not None:
            _named_by_the_loader(work, finding, report, *named)
    for finding in work.with_code("CD411", "CD412", "CD413", "CD414", "CD416", "CD417", "CD418"):
        _setting(work, finding)
    for finding in work.with_code("CD110", "CD116"):
        if _preload_out(work, finding):
            continue
        if finding.code == "CD110" and not finding.values.get("set_variable"):
            continue  # the driver's own failure: not the environment's to treat here
        if finding.values.get("set_variable"):  # a sanitizer's option (compat [[sanitizer]]): the user's options kept
            variable = str(finding.values["set_variable"])
            work.take([finding], Action(ENV, (), f"{variable}={finding.values.get('set_value')}: "
                                                 f"{finding.values.get('set_why')}", "; ".join(finding.refs),
                                        env=(EnvChange(variable, "set", str(finding.values.get("set_value"))),)))
            continue
        line = str(finding.values.get("shell_line") or "")
        if line:  # the umask, an ignored signal (compat/process_start.toml): the shell's own line undoes it
            command, _, value = line.partition(" ")
            work.take([finding], Action(ENV, (), str(finding.values.get("shell_why") or line),
                                        "; ".join(finding.refs) or "execve(2)",
                                        env=(EnvChange(command, "shell", value),)))
            continue
        _limit(work, finding, report)
    for finding in work.with_code("CD206"):
        if view.ptxas and finding.subject == view.ptxas and finding.values.get("folder"):
            folder = str(finding.values["folder"])
            work.take([finding], Action(ENV, (), f"{folder} out of PATH: XLA then finds the ptxas of its own CUDA "
                                                 "(or the toolkit's), which knows this GPU", XLA_PTXAS_SOURCE,
                                        env=(EnvChange("PATH", "remove", folder),)))
    for finding in work.with_code("CD115"):
        _memory(work, finding, report)


def _wheel_again(work: Any, finding: Finding, report: Report) -> None:
    """The framework's own file that its preloading code dies opening (rules.process_env._preloading_died): the wheel
    whose RECORD lists it installed again, its files whole (pip, through the framework's own Python); where no wheel
    owns it, said."""
    framework = next((f for f in report.frameworks if f.name == finding.values.get("user")), None)
    python = work.setting.python or (framework.details.get("python") if framework is not None else None)
    wheel = str(finding.values.get("wheel") or "")
    why = (f"{finding.subject} is damaged (the framework's own wheel's copy, which its code takes by full path); pip "
           "puts back its wheel's files whole")
    if wheel and python:
        work.take([finding], Action(PIP, (), why, WHEEL_SOURCE,
                                    argv=(str(python), "-m", "pip", "install", "--force-reinstall", "--no-deps", wheel)))
        return
    work.take([finding], Action(MANUAL, (), why, WHEEL_SOURCE, text=(
        f"Install again the package that owns {finding.subject} (no wheel's RECORD lists it: `pip show -f` names the "
        "package of a file), or replace the file with an unbroken copy of the same release")))


WHEEL_SOURCE = ("pip documentation, pip install --force-reinstall (https://pip.pypa.io/en/stable/cli/pip_install/): "
                "reinstall all packages even if they are already up-to-date; the wheel's RECORD lists its files "
                "(PEP 376, https://peps.python.org/pep-0376/)")


def _hook_folders_out(work: Any, finding: Finding, own: str) -> bool:
    """Where a start-up hook on PYTHONPATH loaded the finding's library (its values name the hooks' folders): those
    folders out of PYTHONPATH, so the framework loads its OWN (cuDNN, copy) again. Whether it took the finding."""
    folders = [f for f in str(finding.values.get("hook_folders") or "").split(os.pathsep) if f]
    if not folders:
        return False
    work.take([finding], Action(ENV, (), f"{', '.join(folders)} out of PYTHONPATH: its start-up hook "
                                         f"({finding.values.get('hooks')}) loads {finding.subject} into every "
                                         f"Python program, before the framework's own {own}",
                                "Python: the site module runs sitecustomize and usercustomize at start "
                                "(https://docs.python.org/3/library/site.html)",
                                env=tuple(EnvChange("PYTHONPATH", "remove", f) for f in folders)))
    return True


def _plugin(work: Any, finding: Finding, report: Report) -> None:
    """A plugin the framework's import stops on (rules/python_plugins.py): the PYTHONPATH folder that declares it
    taken out, else the framework's own switch for its plugins turned off (compat/python_plugins.toml)."""
    entry = str(finding.values.get("entry") or "")
    switch = str(finding.values.get("switch") or "")
    on_path = [e for e in report.variable_folders.get("PYTHONPATH", []) if entry and os.path.realpath(e) ==
               os.path.realpath(entry)]
    plugin = finding.values.get("plugin") or "its plugins' package metadata"
    if on_path:
        work.take([finding], Action(ENV, (), f"{on_path[0]} out of PYTHONPATH: it declares the plugin {plugin}, "
                                             "whose module is not there", "Python: the module search path (sys.path)",
                                    env=(EnvChange("PYTHONPATH", "remove", on_path[0]),)))
    elif switch:
        work.take([finding], Action(ENV, (), f"{switch}=0: {finding.values.get('framework')} then loads no "
                                             f"'{finding.values.get('group')}' plugin as it is imported (not "
                                             f"{plugin})", str(finding.refs[0] if finding.refs else switch),
                                    env=(EnvChange(switch, "set", "0"),)))


def _driver_library(work: Any, finding: Finding, report: Report) -> None:
    view = report.process
    if view is None or not view.libcuda:
        return
    platform = report.host.platform
    if platform is not None and platform.kind == "wsl2" and platform.wsl_lib and \
            os.path.realpath(os.path.dirname(view.libcuda)) == os.path.realpath(platform.wsl_lib):
        return  # WSL's own libcuda is the Windows driver's: never taken away (plan/platform.py's wsl_driver)
    why = (f"{view.libcuda} is what the loader gives programs for libcuda.so.1; without it they load the driver's "
           f"own ({'the stub' if finding.code == 'CD111' else 'the release of the kernel module'} is gone)")
    if view.libcuda_via == "LD_PRELOAD" and view.libcuda_entry:
        drop_preload(work, [finding], view.libcuda_entry, report, why)
    elif view.libcuda_via == "LD_LIBRARY_PATH" and view.libcuda_entry:
        work.take([finding], Action(ENV, (), why, LOADER_SOURCE,
                                    env=(EnvChange("LD_LIBRARY_PATH", "remove", view.libcuda_entry),)))


def _nvml_library(work: Any, finding: Finding, report: Report) -> None:
    view = report.process
    if view is None or not view.nvml_library:
        return
    why = (f"{view.nvml_library} is what the loader gives programs for libnvidia-ml.so.1; without it they load the "
           "driver's own NVML")
    if view.nvml_via == "LD_PRELOAD" and view.nvml_entry:
        drop_preload(work, [finding], view.nvml_entry, report, why)
    elif view.nvml_via == "LD_LIBRARY_PATH" and view.nvml_entry:
        work.take([finding], Action(ENV, (), why, LOADER_SOURCE,
                                    env=(EnvChange("LD_LIBRARY_PATH", "remove", view.nvml_entry),)))


def loader_named(words: str, report: Report) -> tuple[str, str, str] | None:
    """(via, entry, file) where the loader's WORDS ("/x/libstdc++.so.6: version `GLIBCXX_3.4.11' not found (required
    by /y/libcudnn.so.9)", "/x/libz.so.1: file too short") name a file it refused that an LD_PRELOAD entry or an
    LD_LIBRARY_PATH folder (or its glibc-hwcaps subfolder) gave. The culprit is the last file named before the
    loader's reason ("A: B: C: reason": A needed B, which needed C); the libraries that need it are not the cause.
    None where that file came from elsewhere (the system's own) or no file is named."""
    view = report.process
    from cudnn_doctor.probes.hwcaps import entry_of

    named = [part.strip() for part in words.split(": ") if part.strip().startswith("/") and " " not in part.strip()]
    for path in named[-1:]:
        real = os.path.realpath(path)
        if view is not None:
            preloaded = next((entry for entry in view.preload if os.path.realpath(entry) == real), None)
            if preloaded:
                return ("LD_PRELOAD", preloaded, path)
        folder = os.path.realpath(entry_of(os.path.dirname(path)))
        entry = next((e for e, r in zip(report.ld_library_path, report.ld_library_path_real, strict=False)
                      if r == folder), None)
        if entry is not None:
            return ("LD_LIBRARY_PATH", entry, path)
    return None


def _named_by_the_loader(work: Any, finding: Finding, report: Report, via: str, entry: str, file: str,
                         also: list[Finding] | None = None) -> None:
    """The LD_LIBRARY_PATH folder, or the LD_PRELOAD entry, that gave the file the loader refused, taken out (ALSO:
    findings the same file caused, treated by the same step)."""
    why = (f"{file}, which the loader refuses, comes from {via} ({entry}), before the system's and the framework's own "
           "libraries; without it the loader takes those")
    if via == "LD_PRELOAD":
        drop_preload(work, [finding, *(also or [])], entry, report, why)
    elif via == "LD_LIBRARY_PATH":
        work.take([finding, *(also or [])], Action(ENV, (), why, LOADER_SOURCE,
                                                   env=(EnvChange("LD_LIBRARY_PATH", "remove", entry),)))


def drop_preload(work: Any, found: list[Finding], entry: str, report: Report, why: str,
                 also: tuple[EnvChange, ...] = ()) -> None:
    """LD_PRELOAD without ENTRY (as written there), or unset where nothing else is left; ALSO: the changes that go
    with it in the same step (the folder that would bring the same library once the preload is gone)."""
    view = report.process
    if view is None:
        return
    kept = [other for other in view.preload if other != entry]
    change = EnvChange("LD_PRELOAD", "set", " ".join(kept)) if kept else EnvChange("LD_PRELOAD", "unset", "")
    work.take(found, Action(ENV, (), why, LOADER_SOURCE, env=(change, *also)))


def _visible_devices(work: Any, finding: Finding, report: Report) -> None:
    view = report.process
    value = view.cuda_visible_devices if view else None
    if value is None:
        return
    usable = usable_entries(value, report)
    if usable:
        change = EnvChange("CUDA_VISIBLE_DEVICES", "set", ",".join(usable))
        why = f"the entries of CUDA_VISIBLE_DEVICES that name GPUs of this machine, each once: {','.join(usable)}"
    else:
        change = EnvChange("CUDA_VISIBLE_DEVICES", "unset", "")
        why = "no entry of CUDA_VISIBLE_DEVICES names a GPU of this machine: unset, every GPU is visible"
    work.take([finding], Action(ENV, (), why, CUDA_ENV_SOURCE, env=(change,)))


def usable_entries(value: str, report: Report) -> list[str]:
    """CUDA_VISIBLE_DEVICES's entries that name one GPU of this machine (an index, a GPU- UUID or a prefix of
    exactly one, in any letter case), each GPU once, in the order given; a UUID as nvidia-smi spells it (a driver
    that compares the letters as written refuses another case, and the entry kept as given would keep the cause)."""
    uuids = [gpu.uuid or "" for gpu in report.gpus]
    chosen: list[str] = []
    taken: set[int] = set()
    for entry in (e.strip() for e in value.split(",")):
        index = None
        if ascii_digits(entry) and int(entry) < len(report.gpus):
            index = int(entry)
        elif entry.upper().startswith("GPU-") and len(entry) > 4:
            matches = [i for i, uuid in enumerate(uuids) if uuid.upper().startswith(entry.upper())]
            index = matches[0] if len(matches) == 1 else None
        if index is not None and index not in taken:
            taken.add(index)
            chosen.append(uuids[index][:len(entry)] if entry.upper().startswith("GPU-") else entry)
    return chosen


def _loaded_copy(work: Any, finding: Finding, report: Report) -> None:
    """A sub-library problem of the copy a framework loads: where that copy comes first through LD_LIBRARY_PATH
    or LD_PRELOAD, the change that lets the framework load its own; a copy of its own is for the next
    treatments (its package manager's reinstall)."""
    view = report.process
    if view is None:
        return
    loaded = next((c for c in view.cudnn if c.library == finding.values.get("loaded_library", finding.subject)), None)
    if loaded is None:
        return
    file = str(finding.values.get("sublibrary_file") or "")
    from cudnn_doctor.probes.hwcaps import entry_of

    # the LD_LIBRARY_PATH folder the loader searched: a file in its glibc-hwcaps/x86-64-v3 is found through it
    real = os.path.realpath(entry_of(os.path.dirname(file))) if file else ""
    entry = next((e for e, r in zip(report.ld_library_path, report.ld_library_path_real, strict=False) if r == real),
                 None) if real else None
    graph_file = str(finding.values.get("graph_file") or "")  # the chain's first link (rules: a graph library
    graph_real = os.path.realpath(entry_of(os.path.dirname(graph_file))) if graph_file else ""  # outside its folder)
    graph_entry = next((e for e, r in zip(report.ld_library_path, report.ld_library_path_real, strict=False)
                        if r == graph_real), None) if graph_real else None
    if graph_entry and graph_entry != loaded.entry:
        changes = [EnvChange("LD_LIBRARY_PATH", "remove", graph_entry)]
        if entry and entry not in (graph_entry, loaded.entry):
            changes.append(EnvChange("LD_LIBRARY_PATH", "remove", entry))
        why = (f"{graph_entry} in LD_LIBRARY_PATH holds the {os.path.basename(graph_file)} that the loader gives the "
               f"cuDNN {_users(view.cudnn, loaded)} loads, outside that copy's folder; cuDNN's graph library opens its "
               "engines from its own folder first, so without it they come from the copy's own"
               + (f", and {entry} holds the {os.path.basename(file)} the loader refuses" if len(changes) > 1 else ""))
        work.take([finding], Action(ENV, (), why, LOADER_SOURCE, env=tuple(changes)))
        return
    if entry and entry != loaded.entry:  # the framework's own front library, this sub-library from a folder before
        why = (f"{entry} in LD_LIBRARY_PATH holds the {os.path.basename(file)} that the cuDNN {_users(view.cudnn, loaded)} "
               "loads finds first (its sub-libraries are opened by name, LD_LIBRARY_PATH before its own folder), and "
               "the loader refuses it; without it cuDNN loads the one beside it")
        work.take([finding], Action(ENV, (), why, LOADER_SOURCE, env=(EnvChange("LD_LIBRARY_PATH", "remove", entry),)))
        return
    if loaded.via == "LD_PRELOAD" and loaded.entry:
        drop_preload(work, [finding], loaded.entry, report, f"{loaded.library} is preloaded into every program")
        return
    if loaded.via != "LD_LIBRARY_PATH" or not loaded.entry:
        return
    why = (f"{loaded.entry} in LD_LIBRARY_PATH holds the cuDNN {_users(view.cudnn, loaded)} loads, and its "
           "sub-libraries are opened through the same search; without it each framework loads the copy it was "
           "installed with")
    work.take([finding], Action(ENV, (), why, LOADER_SOURCE,
                                env=(EnvChange("LD_LIBRARY_PATH", "remove", loaded.entry),)))


def _users(loaded_all: tuple[LoadedCudnn, ...], loaded: LoadedCudnn) -> str:
    return ", ".join(dict.fromkeys(c.user for c in loaded_all if c.library == loaded.library))


def _preload_out(work: Any, finding: Finding) -> bool:
    """A preload no row knows that slows or takes from every process (rules.process_env.slow_preload): its entries
    out of LD_PRELOAD, the others kept. Whether it took the finding."""
    slow = str(finding.values.get("slow_preload") or "")
    if not slow:
        return False
    view = work.report.process
    preloaded = view.preload if view is not None else ()
    entries = slow.split(" ")
    changes = []
    if any(entry in preloaded for entry in entries):
        kept = [entry for entry in preloaded if entry not in entries]
        changes.append(EnvChange("LD_PRELOAD", "set", " ".join(kept)) if kept else EnvChange("LD_PRELOAD", "unset", ""))
    if any(entry not in preloaded for entry in entries):  # an audit library (LD_AUDIT): no row knows any
        changes.append(EnvChange("LD_AUDIT", "unset", ""))
    where = " and ".join(change.variable for change in changes)
    work.take([finding], Action(ENV, (), f"{slow} out of {where}: programs then start without it (load it for the one "
                                         "program you use it with)", LOADER_SOURCE, env=tuple(changes)))
    return True


def _setting(work: Any, finding: Finding) -> None:
    if _preload_out(work, finding):
        return
    variable = str(finding.values.get("variable") or finding.subject)
    if not variable.replace("_", "a").isalnum() or not variable.isascii() or variable[:1].isdigit():
        return  # several variables together (none alone was seen to matter): fix asks the frameworks which
    corrected = finding.values.get("fix_value")
    from cudnn_doctor.knowledge.environment import family_of, rows

    if str(finding.values.get("value") or "").startswith("(unset:") and not corrected:  # its reader's own place
        work.take([finding], Action(MANUAL, (), f"{variable} is unset: its reader uses its own place, which it cannot "
                                                "use", (rows().get(variable) or {}).get("source", "compat/process_env.toml"),
                                    text=f"Make {finding.values.get('problem')!s} right (a folder this user can write "
                                         f"in), or set {variable} to such a folder"))
        return

    view = work.report.process
    inside = next((s for s in (view.set_in_python if view is not None else ()) if s[0] == variable), None)
    if inside is not None:  # a start-up hook sets it inside every Python: the shell's unset would change nothing
        _set_by_a_hook(work, finding, inside)
        return
    row: dict[str, Any] = rows().get(variable) or family_of(variable) or {}
    if corrected:
        change = EnvChange(variable, "set", str(corrected))
        why = (f"{variable}={corrected}: the value it takes that {finding.values.get('value')} was written for "
               f"({row.get('effect', 'as documented')})" if row.get("kind") == "enum" else
               f"{variable} without what the framework refuses: {corrected}")
    else:
        change = EnvChange(variable, "unset", "")
        why = f"{variable} unset: the framework's default ({row.get('effect', 'as documented')})"
    work.take([finding], Action(ENV, (), why, row.get("source", "compat/process_env.toml"), env=(change,)))


def _set_by_a_hook(work: Any, finding: Finding, inside: tuple[str, ...]) -> None:
    """A setting a Python start-up hook sets (report.process.set_in_python: variable, value, the hook files naming
    it): the folder of that hook out of PYTHONPATH where it is there, else that line out of the file, said."""
    variable, value, files = inside[0], inside[1], [f for f in inside[2].split(os.pathsep) if f]
    on_path = {os.path.realpath(e): e for e in work.report.variable_folders.get("PYTHONPATH", [])}
    folders = list(dict.fromkeys(on_path[os.path.realpath(_hook_folder(f))] for f in files
                                 if os.path.realpath(_hook_folder(f)) in on_path))
    said = f"{', '.join(files) or 'a start-up hook'} sets {variable}={value!r} inside every Python program"
    if folders:
        work.take([finding], Action(ENV, (), f"{', '.join(folders)} out of PYTHONPATH: {said}, so `unset {variable}` "
                                             "in the shell changes nothing (what else that folder holds goes too)",
                                    HOOK_SOURCE, env=tuple(EnvChange("PYTHONPATH", "remove", f) for f in folders)))
        return
    work.take([finding], Action(MANUAL, (), f"{said}, so `unset {variable}` in the shell changes nothing",
                                HOOK_SOURCE, text=f"Take the line that sets {variable} out of "
                                                  f"{', '.join(files) or 'the sitecustomize, usercustomize or .pth file that sets it'}"
                                                  f" (python -X importtime -c pass lists the start-up modules)"))


HOOK_SOURCE = "Python: the site module runs sitecustomize, usercustomize and .pth lines at start " \
              "(https://docs.python.org/3/library/site.html)"


def _hook_folder(path: str) -> str:
    """The sys.path entry a hook file is found in (sitecustomize/__init__.py: the folder above its package)."""
    folder = os.path.dirname(path)
    return os.path.dirname(folder) if os.path.basename(path) == "__init__.py" else folder


def _limit(work: Any, finding: Finding, report: Report) -> None:
    view = report.process
    resource = str(finding.subject)
    row: dict[str, Any] = next((r for r in load("process_env").get("limit", []) if r["resource"] == resource), {})
    soft, hard = view.limits.get(resource, (-1, -1)) if view else (-1, -1)
    option = row.get("option", "-v")
    if resource == "RLIMIT_NOFILE":  # room for the frameworks past the descriptors a program holds at start
        held = finding.values.get("held")
        held = held if isinstance(held, int) else 3
        wanted = 4096  # the next power of two that leaves a thousand free past them
        while wanted < held + 1024:
            wanted *= 2
        wanted = wanted if hard < 0 else min(hard, wanted)
        target = str(wanted) if wanted - held >= int(row.get("jax_free_minimum", row.get("jax_minimum", 0))) else None
    elif resource in ("RLIMIT_CPU", "RLIMIT_NPROC", "RLIMIT_DATA"):  # up to what the hard limit allows
        unit = 1024 if row.get("unit_kib") else 1
        target = "unlimited" if hard < 0 else str(hard // unit) if hard > soft >= 0 else None
    else:
        target = "unlimited" if hard < 0 else None
    if target is not None:
        work.take([finding], Action(ENV, (), f"the soft limit raised to {target} for this shell (the hard limit "
                                              "allows it)", row.get("source", "setrlimit(2)"),
                                    env=(EnvChange(f"ulimit {option}", "limit", target),)))
        return
    if finding.values.get("framework") == "jax" and resource == "RLIMIT_AS":
        work.take([finding], Action(ENV, (), "JAX told not to preallocate GPU memory, so it does not take the address "
                                             "space the hard limit leaves", row.get("source", "setrlimit(2)"),
                                    env=(EnvChange("XLA_PYTHON_CLIENT_PREALLOCATE", "set", "false"),)))
        return
    if resource == "RLIMIT_NOFILE" and isinstance(finding.values.get("held"), int) and finding.values["held"] > 3:
        work.take([finding], Action(MANUAL, (), finding.title, row.get("source", "setrlimit(2)"),
                                    text=f"the hard limit ({hard}) leaves no room for more: start the program from a "
                                         "shell that does not hold the descriptors its parent left open (the parent "
                                         "starting it with close_fds, or the shell closing them: cudnn-doctor check "
                                         "--deep tries that and gives the line), or ask the site's administrator "
                                         f"for a higher hard limit (`ulimit -H {option}` shows it)"))
        return
    work.take([finding], Action(MANUAL, (), finding.title, row.get("source", "setrlimit(2)"),
                                text=f"the hard limit ({'unlimited' if hard < 0 else hard}) is the site's: ask its "
                                     f"administrator to raise it (`ulimit -H {option}` shows it)"))


def _memory(work: Any, finding: Finding, report: Report) -> None:
    pids = finding.values.get("pids") or []
    text = (f"wait for or stop the processes holding GPU {finding.values.get('gpu')}'s memory "
            f"({', '.join(str(p) for p in pids) or 'see nvidia-smi'}), or choose another GPU with CUDA_VISIBLE_DEVICES")
    work.take([finding], Action(MANUAL, (), finding.title, "nvidia-smi(1)", text=text))


__all__ = ["treat", "usable_entries"]
