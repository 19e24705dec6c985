"""Report + findings + compat data -> one Plan: the smallest set of actions after which `check` finds none of
the errors that can be fixed here. Pure: no I/O beyond the compat tables.

The treatments run in order, each taking the findings it resolves; what no treatment takes gets the code's
advice (compat/fixes.toml) as a manual step. One cause, one action: a cuDNN copy whose sub-libraries come from
an LD_LIBRARY_PATH folder is one env change, not a reinstall; every cuDNN the loader must find is chosen once,
for every framework that will load it, so two findings never prescribe two different releases.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import field, replace
from typing import Any

from cudnn_doctor.knowledge.advice import advice_row
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.model import ERROR, WARNING, CudnnInstall, Finding, Framework, Report
from cudnn_doctor.plan import first_use, multi_gpu, process_env
from cudnn_doctor.plan.actions import CONDA, EDIT, ENV, INSTALL, MANUAL, PIP, Action, EnvChange, Plan
from cudnn_doctor.plan.fixes import remedy
from cudnn_doctor.quoting import code_span, command_line, in_prose
from cudnn_doctor.records import record
from cudnn_doctor.rules.chains import FOLLOWS
from cudnn_doctor.rules.cudnn import prefix_of
from cudnn_doctor.versions import ascii_digits, major, version_tuple

PACKAGE_MANAGED = ("pip:", "conda")  # folders a package manager owns: never written by `cudnn-doctor install`
CUDNN_DATA = "compat/cudnn.toml [[release]]"


@record
class Setting:
    """What the plan needs beyond the report: where a cuDNN of our own goes, and the interpreter that counts."""

    home: str
    python: str | None = None  # --python, else None (each framework's own environment's interpreter)
    requirements: tuple[Any, ...] = ()  # the parsed --require specs


@record
class _Work:
    """The planner's state: findings still open, actions taken."""

    report: Report
    setting: Setting
    found: list[Finding]  # every finding the plan may treat, in the report's order
    _actions: list[Action] = field(default_factory=list)  # each as first taken; what it treats is kept beside it
    _index: dict[tuple[Any, ...], int] = field(default_factory=dict)  # each action's identity -> its place
    _resolves: list[dict[str, None]] = field(default_factory=list)  # each action's codes, in order
    _treats: list[list[tuple[str, str | None]]] = field(default_factory=list)  # each action's (code, subject)s
    _taken: set[int] = field(default_factory=set)  # the findings an action treats (their ids)

    @property
    def actions(self) -> list[Action]:
        """The actions taken, each with the codes and findings it treats."""
        return [replace(action, resolves=tuple(codes), findings=tuple(keys))
                for action, codes, keys in zip(self._actions, self._resolves, self._treats, strict=True)]

    @property
    def open(self) -> list[Finding]:
        """The findings no action treats yet, in order."""
        return [f for f in self.found if id(f) not in self._taken]

    def take(self, found: Iterable[Finding], action: Action) -> None:
        """ACTION treats FOUND: merged into the same action taken before (its findings and codes added), and FOUND
        no longer open. Linear in the findings: 2,000 `--search-path` folders (a finding each) took 7 s here."""
        found = list(found)
        at = self._index.get(_identity(action))
        if at is None:
            self._index[_identity(action)] = at = len(self._actions)
            self._actions.append(action)
            self._resolves.append({})
            self._treats.append([])
        self._resolves[at].update(dict.fromkeys(f.code for f in found))
        self._treats[at].extend((f.code, f.subject) for f in found)
        self._taken.update(id(f) for f in found)

    def with_code(self, *codes: str) -> list[Finding]:
        return [f for f in self.open if f.code in codes]

    def also(self, root: str, found: Finding) -> None:
        """FOUND, which follows from the refusal ROOT ("CODE FILE", rules/chains.py), is resolved by the action that
        treats that refusal; where none does, it stays open for a step of its own."""
        code, _, file = root.partition(" ")
        refusal = next((f for f in self.found if f.code == code and id(f) in self._taken and file in
                        (f.subject, f.values.get("library"), f.values.get("sublibrary_file"))), None)
        at = next((i for i, treats in enumerate(self._treats) if refusal is not None and
                   (refusal.code, refusal.subject) in treats), None)
        if at is None:
            self.found.append(found)
            return
        self._resolves[at][found.code] = None
        self._treats[at].append((found.code, found.subject))


def _identity(action: Action) -> tuple[Any, ...]:
    """What makes two actions the same one (its kind, what it runs or says, the changes it makes), hashable."""
    return (action.kind, action.argv, action.text,
            tuple((c.variable, c.op, c.folder, c.system) for c in action.env))


def make_plan(report: Report, findings: list[Finding], setting: Setting) -> Plan:
    """The one treatment of REPORT's errors and warnings."""
    treated = [f for f in findings if (f.severity in (ERROR, WARNING) or _treatable_info(report, f))
               and f.code not in NOTHING_TO_DO]
    # a finding that follows from a refusal (rules/chains.py) is treated by the refusal's step, not a step of its own
    followers = [f for f in treated if f.values.get(FOLLOWS)]
    work = _Work(report, setting, [f for f in treated if not f.values.get(FOLLOWS)])
    for treatment in TREATMENTS:
        treatment(work)
    for finding in followers:
        work.also(str(finding.values[FOLLOWS]), finding)
    for finding in list(work.open):
        text = remedy(finding, report.host.os)
        row = advice_row(finding.code, report.host.os) or {}
        work.take([finding], Action(MANUAL, (), finding.title, row.get("source", "compat/fixes.toml"), text=text))
    # the first step treats what a program meets first: the driver, then the errors (the refusals seen, the rules
    # proven), then what is only read or follows from them; otherwise the treatments' own order
    errors = {(f.code, f.subject) for f in treated if f.severity == ERROR}
    first = sorted(work.actions, key=lambda action: (not set(action.resolves) & set(DRIVER_FIRST),
                                                     not set(action.findings) & errors))
    return Plan(targets=_targets(report, setting), actions=tuple(first))


DRIVER_FIRST = ("CD101",)  # no driver: what every other step waits on comes first
NOTHING_TO_DO = ("CD159",)  # no NVIDIA GPU in the machine: no step of a plan (its advice says what is asked for)


def _treatable_info(report: Report, finding: Finding) -> bool:
    """CD310 of a copy no framework loads: the one piece of information with an exact treatment."""
    if finding.code != "CD310":
        return False
    return not any(i.loaded_by for i in report.cudnn if i.path == finding.subject)


def _targets(report: Report, setting: Setting) -> tuple[str, ...]:
    names = [f"{_name(f)} {f.version or ''} ({'--framework' if f.details.get('assumed') else f.location or f.found_via})"
             for f in report.frameworks]
    names += [f"--require {getattr(r, 'text', r)}" for r in setting.requirements]
    return tuple(names) or ("this machine's CUDA and cuDNN",)


def _name(framework: Framework) -> str:
    from cudnn_doctor.knowledge import frameworks as knowledge

    return knowledge.display(knowledge.canonical_name(framework.name) or framework.name)


# --- one cause: sub-libraries or a whole cuDNN taken from an LD_LIBRARY_PATH folder -----------------------------

WINDOWS_SEARCH_ORDER = ("Dynamic-link library search order (learn.microsoft.com/windows/win32/dlls/"
                        "dynamic-link-library-search-order): the program's folder, System32, the Windows folder, PATH")


def loader_change(report: Report, op: str, folder: str) -> EnvChange:
    """OP ("prepend" | "remove") FOLDER on the variable the loader searches: LD_LIBRARY_PATH, or Windows' PATH."""
    if report.host.os == "windows":
        return EnvChange("PATH", op, folder.replace("/", "\\"), system="windows")
    return EnvChange("LD_LIBRARY_PATH", op, folder)


def loader_source(report: Report) -> str:
    return WINDOWS_SEARCH_ORDER if report.host.os == "windows" else "ld.so(8): LD_LIBRARY_PATH"


def _in_variable(report: Report, install: CudnnInstall) -> str | None:
    """The LD_LIBRARY_PATH entry that holds INSTALL, if any."""
    real = report.ld_library_path_real or [os.path.normpath(f) for f in report.ld_library_path]
    for folder, resolved in zip(report.ld_library_path, real, strict=False):
        if os.path.normpath(folder) == os.path.normpath(install.path) or resolved in (install.real_path, install.path):
            return folder
    return None


def variable_shadows(work: _Work) -> None:
    report = work.report
    shadowing = {i.library: i for i in report.cudnn if _in_variable(report, i)}
    for finding in work.with_code("CD302"):
        extra = [i for i in shadowing.values() if "ld.so" not in i.loaded_by and i.version]
        kept = next((i for i in report.cudnn if "ld.so" in i.loaded_by), None)
        folders = tuple(dict.fromkeys(_in_variable(report, i) or i.path for i in extra))
        if not folders or kept is None:
            continue
        why = (f"the loader picks cuDNN {kept.version} at {kept.path}; the other copies in LD_LIBRARY_PATH "
               f"({', '.join(f'{i.version} at {i.path}' for i in extra)}) are what a program gets when the order changes")
        work.take([finding], Action(ENV, (), why, loader_source(report),
                                    env=tuple(loader_change(report, "remove", f) for f in folders)))
    for finding in work.with_code("CD408", "CD401", "CD303", "CD305"):
        culprit = _shadowing_copy(report, finding, shadowing)
        if culprit is None:
            continue
        folder = _in_variable(report, culprit) or culprit.path
        why = (f"{folder} in LD_LIBRARY_PATH comes before every other folder the loader searches, so its cuDNN "
               f"{culprit.version} is what is loaded in place of the copy that was installed with the program (and "
               "libcudnn.so opens its sub-libraries through the same search)")
        source = WINDOWS_SEARCH_ORDER if report.host.os == "windows" else \
            "ld.so(8): LD_LIBRARY_PATH is searched before DT_RUNPATH and the ldconfig cache"
        work.take([finding], Action(ENV, (), why, source, env=(loader_change(report, "remove", folder),)))


def _shadowing_copy(report: Report, finding: Finding, shadowing: dict[str, CudnnInstall]) -> CudnnInstall | None:
    if finding.code == "CD408":
        return shadowing.get(finding.subject or "")
    install = next((i for i in report.cudnn if i.library == finding.subject), None)
    if install is None or install.source.startswith(PACKAGE_MANAGED) is False:
        return None  # a toolkit's own mismatch is its own: reinstalled below
    reported = version_tuple(install.version)
    return next((other for other in shadowing.values() if other.library != install.library
                 and version_tuple(other.version) == reported), None)


# --- a cuDNN a framework's package manager owns: reinstalled by that package manager ----------------------------

def framework_pins(work: _Work) -> None:
    """CD401/CD408 of a framework whose wheel pins its cuDNN wheel: that pin, with the framework's own interpreter."""
    for finding in work.with_code("CD401", "CD408"):
        framework = _framework_of(work.report, finding)
        if framework is None or framework.details.get("assumed") or _from_a_build_file(finding):
            continue
        package = framework.details.get("cudnn_package")
        requirement = str(framework.details.get("cudnn_requirement") or "")
        if not package:
            continue
        python = work.setting.python or framework.details.get("python")
        spec = f"{package}{requirement if requirement[:1] in '<>=!~' else ''}"
        why = f"{_name(framework)} {framework.version} requires {spec} and loads it from its own environment"
        source = f"{framework.location}/METADATA (Requires-Dist: {spec})"
        if not _pip_reads(spec[len(package):]):  # a METADATA file is the user's: a pin pip refuses is never run
            work.take([finding], Action(MANUAL, (), why, source, text=(
                f"{framework.location}/METADATA pins its cuDNN wheel as {spec}, which is no version pip reads: "
                f"reinstall {_name(framework)} with its own pip")))
            continue
        if python:
            # the wheel is a cuDNN here: no cuDNN at all (CD301) is over once it is in
            work.take([finding, *work.with_code("CD301")],
                      Action(PIP, (), why, source, argv=(python, "-m", "pip", "install", spec)))
        else:
            work.take([finding], Action(MANUAL, (), why, source, text=f"install {spec} into the Python environment of "
                                                                     f"{framework.location} with its own pip"))


def _pip_reads(requirement: str) -> bool:
    """Whether pip reads REQUIREMENT (a PEP 440 specifier set, or nothing) as one."""
    from cudnn_doctor.specifiers import InvalidSpecifier, Specifiers

    try:
        return not requirement or bool(Specifiers(requirement).text)
    except InvalidSpecifier:
        return False


def package_copies(work: _Work) -> None:
    """CD303/CD304/CD305 of a copy in site-packages or conda: reinstalled by its package manager, never written."""
    for finding in work.with_code("CD303", "CD304", "CD305"):
        install = next((i for i in work.report.cudnn if i.library == finding.subject), None)
        if install is None or not install.source.startswith(PACKAGE_MANAGED):
            continue
        wanted = install.header_version if finding.code == "CD303" and install.header_version else install.version
        release = _release(wanted)
        cuda_major = major(install.cuda_version) or _major_from_package(install.source)
        if install.source.startswith("pip:") and release and release.get("build") not in (None, "unknown"):
            package = install.source.removeprefix("pip:")
            python = work.setting.python or _python_of_site(work.report, install)
            spec = f"{package}=={release['build']}"
            if python:
                work.take([finding], Action(PIP, (), f"{install.path} belongs to the wheel {package}; pip puts back "
                                                     "its files whole", release.get("source", CUDNN_DATA),
                                            argv=(python, "-m", "pip", "install", "--force-reinstall", "--no-deps",
                                                  spec)))
                continue
        text = (f"reinstall the package that owns {install.path} with the package manager that installed it "
                f"({install.source}{f', cuDNN {wanted} for CUDA {cuda_major}' if wanted and cuda_major else ''}); "
                "`cudnn-doctor install` never writes into a package manager's folder")
        work.take([finding], Action(CONDA if install.source == "conda" else MANUAL, (), finding.title,
                                    release.get("source", CUDNN_DATA) if release else CUDNN_DATA, text=text))


def _major_from_package(source: str) -> int | None:
    tail = source.rsplit("-cu", 1)[-1]
    return int(tail) if ascii_digits(tail) else None


def _python_of_site(report: Report, install: CudnnInstall) -> str | None:
    for framework in report.frameworks:
        site = str(framework.details.get("site_packages") or "")
        if site and (install.real_path or install.path).startswith(os.path.realpath(site) + os.sep):
            return framework.details.get("python")  # type: ignore[no-any-return]
        if site and install.path.startswith(site + os.sep):
            return framework.details.get("python")  # type: ignore[no-any-return]
    return None


# --- the cuDNN the loader must find: one release for every framework that loads it -----------------------------

def loader_cudnn(work: _Work) -> None:
    """CD301, CD401/CD408 of frameworks that load the loader's cuDNN, CD320, CD306 and the toolkit's own CD303-305."""
    report = work.report
    wanting = [f for f in work.with_code("CD301", "CD401", "CD408", "CD320", "CD306", "CD303", "CD304", "CD305", "CD312")
               if not _from_a_build_file(f) and not (f.code == "CD301" and _reinstalls_bring_cudnn(report))]
    if not wanting:
        return
    frameworks = [fw for fw in (_framework_of(report, f) for f in wanting) if fw is not None]
    frameworks += [fw for fw in report.frameworks if _loads_from_loader(report, fw) and fw not in frameworks]
    frameworks = [fw for fw in frameworks if not fw.details.get("cpu_only") and fw.details.get("uses_cudnn") is not False
                  and fw.name != "dl4j"]  # a DL4J backend's cuDNN is its own rule's (rules/dl4j.py), by its CUDA X.Y
    repairs = [f for f in wanting if f.code in ("CD303", "CD304", "CD305", "CD306", "CD312")]
    needed = [f for f in wanting if f.code in ("CD301", "CD401", "CD408", "CD320")]
    for finding in repairs:  # a copy in a toolkit or system folder: the right build, into the same prefix
        install = next((i for i in report.cudnn if i.library == finding.subject), None)
        if install is None or install.source.startswith(PACKAGE_MANAGED):
            continue
        toolkit_major = _toolkit_major(report, install)
        if finding.code == "CD312" and finding.values.get("driver_major"):
            cuda_major: int | None = int(finding.values["driver_major"])
        elif finding.code == "CD306" and finding.values.get("toolkit_major"):
            cuda_major = int(finding.values["toolkit_major"])  # the toolkit's major: the copy's own is the problem
        else:
            cuda_major = toolkit_major or major(install.cuda_version) or _cuda_major(report)
        users = [fw for fw in frameworks if fw.cudnn_used in (install.library, install.real_library)]
        # the least change: the same release (for CD306/CD312, its build for the other CUDA major) where it exists
        choice = _choose(cuda_major, users, work.setting.requirements, report.host, prefer=install.version,
                         same_major=install.major)
        variable = _in_variable(report, install) if finding.code == "CD306" and toolkit_major is None else None
        if variable is not None and choice.release is not None and cuda_major is not None:
            # a copy for another CUDA major that LD_LIBRARY_PATH puts before the toolkit's: the right build goes
            # where that toolkit's CUDA is (a prefix of its own where another cuDNN major is there), and that
            # folder leaves LD_LIBRARY_PATH (written over in place, its own folder would keep the old copy)
            _take_install(work, [finding], choice, cuda_major, _prefix_for(work, cuda_major, major(choice.release["version"])),
                          replace_major=False)
            work.take([finding], Action(ENV, (), f"{variable} holds cuDNN {install.version} for CUDA "
                                                 f"{major(install.cuda_version)}, not the toolkit's CUDA {cuda_major}",
                                        "ld.so(8): LD_LIBRARY_PATH", env=(EnvChange("LD_LIBRARY_PATH", "remove", variable),)))
            continue
        _take_install(work, [finding], choice, cuda_major, prefix_of(install), replace_major=True)
    if not needed:
        return
    if any(f.code == "CD408" and _framework_of(report, f) is None for f in needed):
        needed = [f for f in needed if f.code != "CD408" or _framework_of(report, f) is not None]
    majors = {major(fw.cuda_built_for) for fw in frameworks if major(fw.cuda_built_for)}
    if len(majors) > 1:
        text = ("the frameworks here were built for different CUDA majors "
                f"({', '.join(f'{_name(fw)} {fw.version}: CUDA {fw.cuda_built_for}' for fw in frameworks)}); one cuDNN "
                "on the loader's path cannot serve both: give each its own environment with its framework's cuDNN wheel")
        work.take(needed, Action(MANUAL, (), "no single cuDNN fits every framework", CUDNN_DATA, text=text))
        return
    cuda_major = majors.pop() if majors else _cuda_major(report)
    # libcudnn.so.8 and libcudnn.so.9 are different files: frameworks that need different cuDNN majors each get theirs
    groups: dict[int | None, list[Framework]] = {}
    for fw in frameworks:
        groups.setdefault(_cudnn_major_needed(fw), []).append(fw)
    if not groups:
        groups[None] = []
    for cudnn_major, members in sorted(groups.items(), key=lambda item: -(item[0] or 0)):
        mine = [f for f in needed if _framework_of(report, f) in members] if len(groups) > 1 else needed
        if len(groups) > 1 and cudnn_major == max(k or 0 for k in groups):
            mine += [f for f in needed if _framework_of(report, f) is None]  # CD301, CD320: with the newest major
        if not mine:
            continue
        choice = _choose(cuda_major, members, work.setting.requirements, report.host, same_major=cudnn_major,
                         only_major=cudnn_major if len(groups) > 1 else None)
        chosen = major(choice.release["version"]) if choice.release else None
        prefix = _prefix_for(work, cuda_major, chosen, f"cudnn{chosen}-cuda{cuda_major}" if len(groups) > 1 else None)
        _take_install(work, mine, choice, cuda_major, prefix, replace_major=False)


def _prefix_for(work: _Work, cuda_major: int | None, chosen: int | None, own_name: str | None = None) -> str:
    """Where a cuDNN CHOSEN (its major) for CUDA CUDA_MAJOR goes: into that CUDA's toolkit, unless another cuDNN
    major is there; else a prefix of its own under ~/.local/cudnn (OWN_NAME, or cudaN)."""
    report = work.report
    toolkit = next((t for t in report.toolkits if major(t.version) == cuda_major and t.source not in ("pip", "conda")),
                   None)
    held = {i.major for i in report.cudnn if toolkit and prefix_of(i) == toolkit.path and i.major}
    own = os.path.join(work.setting.home, ".local", "cudnn", own_name or (f"cuda{cuda_major}" if cuda_major else "cudnn"))
    return toolkit.path if toolkit and (not held or held == {chosen}) else own


def _reinstalls_bring_cudnn(report: Report) -> bool:
    """No cuDNN here (CD301), and every framework is a CPU-only build whose GPU build brings its own cuDNN wheel (a
    +cpu torch): the reinstall (CD406's) is the whole treatment, no system cuDNN is needed beside it."""
    frameworks = [fw for fw in report.frameworks if fw.name != "dl4j"]
    return bool(frameworks) and all(fw.details.get("cpu_only") and _brings_cudnn(fw, report) for fw in frameworks)


def _cudnn_major_needed(framework: Framework) -> int | None:
    """The cuDNN major FRAMEWORK loads (libcudnn.so.N): from what it was built with or pins, else its data."""
    for text in (framework.cudnn_expected, str(framework.details.get("cudnn_requirement") or "")):
        found = major((text or "").lstrip("<>=!~ "))
        if found:
            return found
    return None


@record
class _Choice:
    """A cuDNN release chosen, and why."""

    release: dict[str, Any] | None
    why: str


def _take_install(work: _Work, found: list[Finding], choice: _Choice, cuda_major: int | None, prefix: str,
                  replace_major: bool) -> None:
    """The install of CHOICE into PREFIX (with --replace where REPLACE_MAJOR lets it replace another cuDNN major
    there whole), and the env line when PREFIX's library folder is not one the loader searches."""
    if choice.release is None or cuda_major is None:
        work.take(found, Action(MANUAL, (), "no cuDNN release in the data fits", CUDNN_DATA, text=choice.why))
        return
    version = choice.release["version"]
    argv: tuple[str, ...] = ("cudnn-doctor", "install", "--version", version, "--cuda", str(cuda_major),
                             "--prefix", prefix)
    present = [i for i in work.report.cudnn if prefix_of(i) == prefix and i.major and i.major != major(version)]
    if present and replace_major:
        argv += ("--replace",)
    why = f"cuDNN {version} for CUDA {cuda_major}: {choice.why}"
    work.take(found, Action(INSTALL, (), why, choice.release.get("source", CUDNN_DATA), argv=argv))
    library_folder = os.path.join(prefix, _library_folder(work.report))
    visible = {os.path.normpath(p) for p in work.report.loader_path} | set(work.report.loader_path_real)
    if os.path.normpath(library_folder) not in visible and os.path.realpath(library_folder) not in visible:
        work.take(found, Action(ENV, (), f"{library_folder} is not a folder the dynamic loader searches",
                                loader_source(work.report), env=(loader_change(work.report, "prepend", library_folder),)))


def _library_folder(report: Report) -> str:
    from cudnn_doctor.knowledge.layout import LAYOUTS

    layout = LAYOUTS.get(f"{report.host.os}-{'sbsa' if report.host.arch == 'aarch64' else report.host.arch}")
    return layout.library_folder if layout else "lib"


def _choose(cuda_major: int | None, frameworks: list[Framework], requirements: Iterable[Any], host: Any,
            prefer: str | None = None, same_major: int | None = None, only_major: int | None = None) -> _Choice:
    """The newest cuDNN release in compat/ with a build for CUDA CUDA_MAJOR that every framework accepts and every
    --require allows (PREFER first where it qualifies)."""
    if cuda_major is None:
        return _Choice(None, "the CUDA major is unknown here (no toolkit, no driver): run `cudnn-doctor check` on the "
                             "machine with the GPU, then `cudnn-doctor compat --list cudnn`")
    from cudnn_doctor.knowledge.query import platform_key

    if platform_key(host.os, host.arch) is None:
        return _Choice(None, f"NVIDIA publishes no cuDNN for {host.os}-{host.arch} (compat/cudnn.toml [[wheel]])")
    specs = [r for r in requirements if getattr(r, "subject", None) == "cudnn"]
    candidates = releases_for(cuda_major, host.os, host.arch)  # newest first; a stable sort keeps that order within each group
    if prefer:
        preferred = (version_tuple(prefer) or ())[:3]
        candidates.sort(key=lambda row: (version_tuple(row["version"]) != preferred,
                                         same_major is not None and major(row["version"]) != same_major))
    refused: list[str] = []
    for row in candidates:
        if only_major is not None and major(row["version"]) != only_major:
            continue
        verdicts = [_accepts(fw, row["version"]) for fw in frameworks]
        if any(v is False for v in verdicts):
            continue
        if not all(spec.allows(row["version"]) for spec in specs):
            continue
        whom = [f"{_name(fw)} {fw.version}" for fw, v in zip(frameworks, verdicts, strict=True) if v]
        why = (f"accepted by {', '.join(whom)}" if whom else "the newest release with a build for this CUDA major")
        if specs:
            why += f", within {', '.join(getattr(s, 'text', str(s)) for s in specs)}"
        return _Choice(row, why)
    names = ", ".join(f"{_name(fw)} {fw.version}" for fw in frameworks) or "the --require given"
    refused.append(f"no cuDNN release with a build for CUDA {cuda_major} in compat/cudnn.toml is accepted by {names}")
    from cudnn_doctor.knowledge import frameworks as knowledge

    asks = ", ".join(code_span(command_line(("cudnn-doctor", "compat",
                                              f"{knowledge.canonical_name(fw.name) or fw.name}=={fw.version}")))
                     for fw in frameworks)
    return _Choice(None, "; ".join(refused) + ": see `cudnn-doctor compat --list cudnn`"
                   + (f" and what each needs ({asks})" if asks else ""))


def releases_for(cuda_major: int, os_name: str = "linux", arch: str = "x86_64") -> list[dict[str, Any]]:
    """compat/cudnn.toml's releases that exist for CUDA CUDA_MAJOR on OS_NAME/ARCH, newest first: those its
    [[wheel]] table lists for the platform (with that row's source), else, for CUDA majors older than NVIDIA's
    wheels (10 and before), the Linux x86-64 archives of the release table."""
    from cudnn_doctor.knowledge.query import cudnn_builds_for

    published = {b.version: b for b in cudnn_builds_for(cuda_major, os_name, arch)}
    rows = []
    for row in load("cudnn").get("release", []):
        if not any(_variant_major(v) == cuda_major for v in row.get("variant", [])) or not version_tuple(row.get("version")):
            continue
        build = published.get(str(row["version"]))
        if build is not None:
            rows.append(row | {"source": f"{build.source}; {row.get('source', CUDNN_DATA)}"})
        elif not published and cuda_major <= 10 and (os_name, arch) == ("linux", "x86_64"):
            rows.append(row)
    return sorted(rows, key=lambda r: version_tuple(r["version"]) or (), reverse=True)


def _variant_major(variant: dict[str, Any]) -> int | None:
    return major(str(variant.get("cuda")))


def _release(version: str | None) -> dict[str, Any] | None:
    wanted = version_tuple(version)
    if not wanted:
        return None
    return next((r for r in load("cudnn").get("release", []) if version_tuple(r.get("version")) == wanted[:3]), None)


def _accepts(framework: Framework, version: str) -> bool | None:
    """Does FRAMEWORK accept cuDNN VERSION? None where the data cannot say."""
    from cudnn_doctor.knowledge import frameworks as knowledge
    from cudnn_doctor.rules.frameworks import judge_cudnn_version

    reason = judge_cudnn_version(framework, version)
    if reason is None or reason.verdict == knowledge.UNKNOWN:
        return None
    return reason.verdict == knowledge.COMPATIBLE


def _toolkit_major(report: Report, install: CudnnInstall) -> int | None:
    real = install.real_path or install.path
    for toolkit in report.toolkits:
        if real.startswith(toolkit.path + os.sep) and toolkit.source not in ("pip", "conda"):
            return major(toolkit.version)
    return None


def _cuda_major(report: Report) -> int | None:
    toolkit = next((t for t in report.toolkits if major(t.version)), None)
    if toolkit is not None:
        return major(toolkit.version)
    if major(report.driver.cuda_driver_version):
        return major(report.driver.cuda_driver_version)
    return int(load("rules").get("default_cuda_major", {}).get("major", 12))


def _framework_of(report: Report, finding: Finding) -> Framework | None:
    wanted = finding.values.get("framework"), finding.values.get("framework_version")
    if wanted[0] is None:
        return None
    return next((fw for fw in report.frameworks if (_name(fw), fw.version) == wanted), None)


def _from_a_build_file(finding: Finding) -> bool:
    """A DL4J finding: its treatment is the rule's own (the backend in the build file, the cuDNN for its CUDA X.Y)."""
    named = finding.values.get("framework")
    if not named:
        return False
    from cudnn_doctor.knowledge import frameworks as knowledge

    return named == knowledge.display("dl4j")


def _loads_from_loader(report: Report, framework: Framework) -> bool:
    if framework.details.get("cudnn_package") and not framework.details.get("assumed"):
        return False
    used = next((i for i in report.cudnn if framework.cudnn_used in (i.library, i.real_library)), None)
    return used is None or "ld.so" in used.loaded_by


# --- the loader's path -------------------------------------------------------------------------------------------

def loader_path(work: _Work) -> None:
    """CD310: the folder onto LD_LIBRARY_PATH (warnings only: CD310 is info unless a plan asks)."""
    for finding in work.with_code("CD310"):
        work.take([finding], Action(ENV, (), finding.title, loader_source(work.report),
                                    env=(loader_change(work.report, "prepend", str(finding.values.get("path"))),)))


# --- framework builds --------------------------------------------------------------------------------------------

def cpu_only_builds(work: _Work) -> None:
    """CD406: the exact GPU build of the installed release, from the framework's own table."""
    for finding in work.with_code("CD406"):
        framework = _framework_of(work.report, finding)
        if framework is None or framework.name == "dl4j":
            continue  # a DL4J backend is switched in the build file: the rule's own fix
        python = work.setting.python or framework.details.get("python")
        steps, why, source = gpu_build(framework, work.report)
        if not steps:
            work.take([finding], Action(MANUAL, (), finding.title, source, text=why))
            continue
        brought = work.with_code("CD301") if _reinstalls_bring_cudnn(work.report) else []
        for argv in steps:
            if python:
                work.take([finding, *brought], Action(PIP, (), why, source, argv=(python, "-m", "pip", *argv)))
            else:
                work.take([finding, *brought], Action(MANUAL, (), why, source,
                                                      text=f"{code_span(command_line(('pip', *argv)))} with the pip "
                                                           f"of the environment that holds "
                                                           f"{in_prose(str(framework.location))}"))


def gpu_support(work: _Work) -> None:
    """CD404: the newest release and build in the framework's table whose architectures cover the GPU."""
    for finding in work.with_code("CD404"):
        framework = _framework_of(work.report, finding)
        cc = str(finding.values.get("cc") or "")
        if framework is None or not cc:
            continue
        from cudnn_doctor.knowledge import frameworks as knowledge

        name = knowledge.canonical_name(framework.name) or framework.name
        found = _release_for_gpu(name, cc, work.report)
        if found is None:
            work.take([finding], Action(MANUAL, (), finding.title, "compat/", text=(
                f"no release of {_name(framework)} in compat/ lists compute capability {cc} among its GPUs: use a GPU "
                f"it supports, or build {_name(framework)} from source for it (TORCH_CUDA_ARCH_LIST={cc})")))
            continue
        version, row = found
        steps, why, source = gpu_build(replace(framework, version=version), work.report, row)
        python = work.setting.python or framework.details.get("python")
        why = f"{_name(framework)} {version} (CUDA {row.get('cuda')}) has kernels for compute capability {cc}; {why}"
        for argv in steps:
            if python and not framework.details.get("assumed"):
                work.take([finding], Action(PIP, (), why, source, argv=(python, "-m", "pip", *argv)))
            else:
                work.take([finding], Action(MANUAL, (), why, source, text="pip " + " ".join(argv)))
        if not steps:
            work.take([finding], Action(MANUAL, (), finding.title, source, text=why))


def _release_for_gpu(name: str, cc: str, report: Report) -> tuple[str, dict[str, Any]] | None:
    from cudnn_doctor.knowledge import frameworks as knowledge
    from cudnn_doctor.knowledge import verdicts

    driver = major(report.driver.cuda_driver_version)
    for version in sorted(knowledge.known_releases(name), key=lambda v: version_tuple(v) or (), reverse=True):
        need = knowledge.needs(name, version)
        if need.missing is not None:
            continue
        for row in need.rows:
            if driver is not None and (major(str(row.get("cuda"))) or 99) > driver:
                continue
            reason = verdicts.judge_compute_capability(need, [row], cc, None)
            if reason.verdict == knowledge.COMPATIBLE and not reason.warning:
                return version, row
    return None


def _brings_cudnn(framework: Framework, report: Report) -> bool:
    """Whether the GPU build that replaces FRAMEWORK's CPU-only one installs a cuDNN wheel with it (PyTorch's pins one)."""
    build = _gpu_build_row(framework, report)
    return build is not None and build.installer == "pip" and bool(build.cudnn_package)


def _gpu_build_row(framework: Framework, report: Report, chosen: dict[str, Any] | None = None) -> Any:
    """The build gpu_build installs, or None where it installs none."""
    from cudnn_doctor.knowledge import frameworks as knowledge
    from cudnn_doctor.knowledge.frameworks import builds

    name = knowledge.canonical_name(framework.name) or framework.name
    version = (framework.version or "").split("+")[0]
    options = [b for b in builds(name, version, report.host.os) if version and str(b.cuda) not in ("None", "unknown", "none")]
    if chosen is not None:
        options = [b for b in options if str(b.cuda) == str(chosen.get("cuda"))] or options
    driver = major(report.driver.cuda_driver_version)
    fitting = [b for b in options if driver is None or (major(str(b.cuda)) or 99) <= driver]
    if not fitting:
        return None
    return next((b for b in fitting if b.default is True), None) or \
        max(fitting, key=lambda b: version_tuple(str(b.cuda)) or ())


def gpu_build(framework: Framework, report: Report, chosen: dict[str, Any] | None = None) \
        -> tuple[list[tuple[str, ...]], str, str]:
    """([pip arguments], why, source) that install the GPU build of FRAMEWORK's release (the CUDA build CHOSEN, else
    the default build where this driver runs it, else the newest CUDA build it runs), from compat/'s builds."""
    from cudnn_doctor.knowledge import frameworks as knowledge
    from cudnn_doctor.knowledge.frameworks import builds

    name = knowledge.canonical_name(framework.name) or framework.name
    version = (framework.version or "").split("+")[0]
    options = [b for b in builds(name, version, report.host.os) if version and str(b.cuda) not in ("None", "unknown", "none")]
    if chosen is not None:
        options = [b for b in options if str(b.cuda) == str(chosen.get("cuda"))] or options
    if not options:
        return [], (f"compat/ has no GPU build of {_name(framework)} {version}: see `cudnn-doctor compat "
                    f"--list {name}` for the releases that have one"), "compat/"
    driver = major(report.driver.cuda_driver_version)
    fitting = [b for b in options if driver is None or (major(str(b.cuda)) or 99) <= driver]
    if not fitting:
        cudas = ", ".join(sorted({str(b.cuda) for b in options}))
        return [], (f"{_name(framework)} {version} was built for CUDA {cudas}, all newer than this driver's CUDA "
                    f"{report.driver.cuda_driver_version}: upgrade the driver first"), options[0].source
    build = _gpu_build_row(framework, report, chosen)
    if build.installer != "pip" or (build.index_url is None and build.index_note):
        return [], (f"install the CUDA {build.cuda} build of {_name(framework)} {version} ({build.requirement}): "
                    f"{build.index_note or build.installer}"), build.source
    requirement, index_url = build.requirement, build.index_url
    local = (framework.version or "").partition("+")[2]
    if name == "pytorch" and local and index_url is None and build.cuda:
        # a +cpu build is installed: its index is in the user's pip settings, and `torch==X.Y.Z` matches its +cpu
        # wheel there; the CUDA build pinned, from PyTorch's index of that CUDA, is the one that can come
        from cudnn_doctor.knowledge.frameworks import profile

        digits = str(build.cuda).replace(".", "")
        template = profile(name).get("build_index")
        if template:
            requirement, index_url = f"{requirement.split('+')[0]}+cu{digits}", template.replace("{cuda_digits}", digits)
    if name == "jax" and requirement.startswith("jax-cuda"):  # JAX's documented line brings jaxlib and the plugin
        requirement = f"jax[cuda{major(str(build.cuda))}]=={version}"
    argv: tuple[str, ...] = ("install", "--force-reinstall", requirement) if name == "pytorch" else ("install", requirement)
    if index_url:
        flag = "--extra-index-url" if name == "onnxruntime" else "--index-url"  # as each project's install page says
        argv += (flag, index_url)
    where = f"from {index_url}" if index_url else "on PyPI"
    why = f"{requirement} is {_name(framework)} {version}'s CUDA {build.cuda} build, {where}"
    steps = [argv]
    if name == "onnxruntime":  # onnxruntime and onnxruntime-gpu both install the module onnxruntime: keep one
        steps.insert(0, ("uninstall", "onnxruntime", "-y"))
        why += "; onnxruntime and onnxruntime-gpu install the same module, so the CPU package goes first"
    return steps, why, build.source


def dl4j_backends(work: _Work) -> None:
    """CD406 (a CPU backend) and CD405 (a CUDA backend for a CUDA that is not here) of a DL4J project: the backend
    for the toolkit this machine has, as an edit of the build file's own lines (a diff), where exactly one
    backend of that DL4J release matches an installed toolkit (compat/dl4j.toml)."""
    from cudnn_doctor.versions import major_minor

    for finding in work.with_code("CD406", "CD405"):
        framework = next((fw for fw in work.report.frameworks if fw.name == "dl4j" and fw.location == finding.subject),
                         None)
        if framework is None or not framework.version or not framework.details.get("backend_lines"):
            continue
        from cudnn_doctor.knowledge import frameworks as knowledge

        rows = [r for r in knowledge.needs("dl4j", framework.version).rows if r.get("artifact", "unknown") != "unknown"]
        here = [r for r in rows if any(major_minor(t.version) == major_minor(str(r["artifact"]).rsplit("-", 1)[-1])
                                       for t in work.report.toolkits)]
        if len(here) != 1:
            continue
        old = str(framework.details.get("artifact"))
        new = str(here[0]["artifact"]) + ("-platform" if old.endswith("-platform") else "")
        lines = framework.details["backend_lines"]
        diff = _diff(lines, old, new)
        why = (f"DL4J {framework.version}'s backend for the CUDA {str(here[0]['artifact']).rsplit('-', 1)[-1]} toolkit "
               f"installed here is {new}")
        work.take([finding], Action(EDIT, (), why, str(here[0].get("source", "compat/dl4j.toml")), text=diff))


def _diff(lines: list[dict[str, Any]], old: str, new: str) -> str:
    """A unified diff that puts NEW where OLD is written in each of LINES ({file, line, text, eol}), as `patch -p0`
    run in / applies it: each file's name quoted as GNU patch reads it (a space, a quote, a byte not UTF-8), each
    line with the file's own bytes and line ending (CRLF kept; a last line without LF, a CR-only file's one line
    included, marked as diff marks it)."""
    out: list[str] = []

    def real(entry: dict[str, Any]) -> str:  # the file itself, not a link to it: patch refuses to patch a link
        return str(entry.get("real") or entry["file"])

    for path in dict.fromkeys(real(entry) for entry in lines):
        out += [f"--- {_patch_name(path)}\n", f"+++ {_patch_name(path)}\n"]
        for entry in (e for e in lines if real(e) == path):
            text, eol = str(entry["text"]), str(entry.get("eol", "\n"))
            end = eol if eol.endswith("\n") else eol + "\n\\ No newline at end of file\n"  # the file's last line
            out += [f"@@ -{entry['line']},1 +{entry['line']},1 @@\n", f"-{text}{end}", f"+{text.replace(old, new)}{end}"]
    return "".join(out)


def _patch_name(path: str) -> str:
    """PATH as a diff's file name: as it is where GNU patch reads it whole, else in double quotes with C escapes
    (octal for each byte that is not printable ASCII), which GNU patch reads back."""
    if re.fullmatch(r"[A-Za-z0-9/._+@,=~-]+", path):
        return path
    out = []
    for byte in path.encode("utf-8", "surrogateescape"):
        char = chr(byte)
        out.append({'"': '\\"', "\\": "\\\\", "\t": "\\t", "\n": "\\n"}.get(char)
                   or (char if 0x20 <= byte < 0x7F else f"\\{byte:03o}"))
    return '"' + "".join(out) + '"'


def framework_builds(work: _Work) -> None:
    """CD403 (built for a CUDA newer than the driver): the driver upgrade, with the floor from NVIDIA's table."""
    for finding in work.with_code("CD403", "CD103", "CD106"):
        floor = finding.values.get("min_driver")
        branch = str(floor).split(".")[0] if floor and ascii_digits(str(floor)[:1]) else None
        if branch is None:
            continue
        text = (f"upgrade the NVIDIA driver to {floor} or newer (branch {branch}): Ubuntu/Debian "
                f"`sudo apt install nvidia-driver-{branch}` (or `sudo ubuntu-drivers install`), RHEL/Rocky `sudo dnf "
                f"module install nvidia-driver:{branch}`, then reboot; in a container, on the host")
        work.take([finding], Action(MANUAL, (), "the driver is older than what runs here needs",
                                    "compat/cuda.toml [[toolkit]] (NVIDIA CUDA Toolkit Release Notes, Table 3)", text=text))


def framework_cuda(work: _Work) -> None:
    """CD410 of a framework that loads the machine's CUDA runtime, where none here is one its build runs on: its GPU
    build with CUDA's libraries as wheels (TensorFlow's `and-cuda` extra, which brings its cuDNN too: that framework's
    CD401 with it), else a toolkit of the CUDA it was built for."""

    for finding in work.with_code("CD410"):
        if "cuda" not in finding.values:
            continue  # a CD410 of another kind (explain's pairs of versions): the advice
        framework = next((fw for fw in work.report.frameworks if _name(fw) == finding.values.get("framework")
                          and fw.version == finding.values.get("framework_version")), None)
        if framework is None:
            continue
        from cudnn_doctor.knowledge import frameworks as knowledge

        name = knowledge.canonical_name(framework.name) or framework.name
        build = _gpu_build_row(framework, work.report)
        related = [f for f in work.with_code("CD401") if _framework_of(work.report, f) is framework]
        if build is not None and build.installer == "pip" and "[and-cuda]" in build.requirement:
            why = (f"{build.requirement} installs {_name(framework)} {framework.version} with the CUDA {build.cuda} "
                   "libraries and the cuDNN it was built with, as wheels beside it")
            python = work.setting.python or framework.details.get("python")
            if python:
                work.take([finding, *related], Action(PIP, (), why, build.source,
                                                      argv=(python, "-m", "pip", "install", build.requirement)))
            else:
                work.take([finding, *related], Action(MANUAL, (), why, build.source, text=(
                    f"{code_span(command_line(('pip', 'install', build.requirement)))} in the Python environment "
                    "that will run it")))
            continue
        cuda = str(finding.values["cuda"])
        work.take([finding], Action(MANUAL, (), finding.title, build.source if build else "compat/", text=(
            f"install a CUDA {in_prose(cuda)} toolkit (the CUDA {name} {in_prose(str(framework.version))} was built "
            f"for) and put its lib64 first on LD_LIBRARY_PATH: "
            f"{code_span(command_line(('cudnn-doctor', 'compat', f'{name}=={framework.version}')))} lists its builds")))


from cudnn_doctor.plan import platform as _platform  # noqa: E402 - its treatments take _Work

TREATMENTS: tuple[Callable[[_Work], None], ...] = (
    *_platform.TREATMENTS, first_use.treat, process_env.treat, multi_gpu.treat, variable_shadows, framework_pins, package_copies, framework_cuda, loader_cudnn, loader_path, dl4j_backends, cpu_only_builds,
    gpu_support, framework_builds)

__all__ = ["Setting", "make_plan", "releases_for"]
