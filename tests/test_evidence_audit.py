"""Round twenty-one's audit of every error plain check and `--deep` raise (issue 45; benchmarks/README.md, "Round
twenty-one: verdicts from evidence, audited (k27)"): an error stands on the thing refusing (seen) or a rule proven
against the real thing, applied to what a child saw (rule); one only read from files, or a model of the loader, is a
warning that says so. Where several findings explain one failure, the error is what the program met first; the
others follow from it or are behind it, and the plan's first step treats the first refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Machine
from tests.fakes.build import fake_cudnn
from tests.test_check import make_toolkit
from tests.test_frameworks import CUDNN9, install_torch, python_env, real_python_sees
from tests.test_loading import TORCH_INIT
from tests.test_process_env import gpu_machine


@pytest.fixture
def machine(machine_in_process: Machine) -> Machine:
    return machine_in_process


def found(report: dict, code: str) -> dict:
    [said] = [f for f in report["findings"] if f["code"] == code]
    return said


def every_error_seen_or_rule(report: dict) -> None:
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert all(f["evidence"] in ("seen", "rule") for f in errors), errors


# --- CD408: the copy a framework loads, seen mapped by its own loading code, or only modelled --------------------------

def test_a_framework_seen_mapping_another_release_is_a_rule_error_that_quotes_the_mapping(machine: Machine,
                                                                                          tmp_path: Path) -> None:
    """torch 2.5.1 built with cuDNN 9.1.0.70 whose wheel folder holds a cuDNN 9.0 (another release of the wheel
    installed over its pin): the loading child ran torch's own loading code, which maps that folder's copy by its
    full path, and it answered 9.0.0; torch's own version rule applies to a copy seen mapped: an error (rule) whose
    proof names the mapping. Before: the same error with no proof of which copy torch maps."""
    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    install_torch(site, cudnn=90000)
    (site / "torch" / "__init__.py").write_text(TORCH_INIT)
    real_python_sees(site, tmp_path)
    report = machine.check_json()
    said = found(report, "CD408")
    assert said["severity"] == "error" and said["evidence"] == "rule", said
    mapped = str(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")
    assert "own loading code" in said["proof"] and mapped in said["proof"] and "9.0.0" in said["proof"], said
    every_error_seen_or_rule(report)


def test_a_framework_no_child_runs_judged_on_a_modelled_copy_is_a_warning(machine: Machine, tmp_path: Path) -> None:
    """Theano's copy is the one its flags name (dnn.library_path): no child runs Theano's loading, so the copy it loads
    is the doctor's model. cuDNN 4.0.7 against what Theano 0.9 needs: CD408 read, a warning that says it was not seen
    failing. Before: an error with rule evidence and the exit status 1."""
    site = python_env(machine, tmp_path)
    (site / "Theano-0.9.0.dist-info").mkdir()
    fake_cudnn(tmp_path / "cudnn4", version=4007, cudart=7050)
    machine.env["THEANO_FLAGS"] = f"device=cuda,dnn.library_path={tmp_path / 'cudnn4'}"
    result = machine.run("check", "--json")
    said = found(result.json, "CD408")
    assert said["severity"] == "warning" and said["evidence"] == "read", said
    assert "4.0.7" in said["detail"] and "not seen failing" in said["proof"], said
    every_error_seen_or_rule(result.json)


def test_the_cuda_runtime_a_framework_would_load_from_the_toolkits_on_disk_is_read(machine: Machine,
                                                                                 tmp_path: Path) -> None:
    """TensorFlow 2.15 (built for CUDA 12.2) on a machine whose only toolkit is CUDA 13: which CUDA runtime it loads
    is the doctor's model of the loader (the toolkits found on disk; its pip wheels would bring their own), no child
    runs it: CD410 read, a warning. Before: an error with rule evidence."""
    from tests.test_check import CUDNN9_SUBLIBS
    from tests.test_fix import with_driver

    with_driver(machine, tmp_path)
    make_toolkit(machine.root, "13.0.96", 13000)
    fake_cudnn(tmp_path / "c9" / "lib", version=91900, cudart=13010, sublibraries=CUDNN9_SUBLIBS)
    machine.add_library_path(tmp_path / "c9" / "lib")
    report = machine.check_json("--framework", "tensorflow==2.15.0")
    said = found(report, "CD410")
    assert said["severity"] == "warning" and said["evidence"] == "read", said
    assert "tensorflow==2.15.0 is not installed here (--framework)" in said["proof"], said
    every_error_seen_or_rule(report)


# --- a copy no program loads: the doctor's own child loaded it by its full path ------------------------------------

@pytest.mark.parametrize("how", ["crash", "newer CUDA"])
def test_a_copy_no_program_loads_is_said_as_such_not_an_error(machine: Machine, tmp_path: Path, how: str) -> None:
    """A CUDA toolkit's folder (not on the loader's path) holds a cuDNN whose load crashes the child that loads it by
    its full path, or one built for CUDA 14 beside a driver of CUDA 13; torch maps its own wheel's copy. No program
    here loads that copy: CD318 (crash) or CD312 a warning that says so. Before: CD309 or CD312, errors."""
    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.9.0+cu130", cuda="13.0", pin="nvidia-cudnn-cu13==9.13.0.50", cudnn=91300)
    toolkit = make_toolkit(machine.root, "13.0.2", 13000)
    if how == "crash":
        fake_cudnn(toolkit / "lib64", version=91300, cudart=13000, sublibraries=CUDNN9, crash=True)
    else:
        fake_cudnn(toolkit / "lib64", version=91300, cudart=14000, sublibraries=CUDNN9)
    report = machine.check_json()
    copy = str(toolkit / "lib64" / "libcudnn.so.9")
    about = [f for f in report["findings"] if copy in (f.get("subject") or "")]
    assert about and all(f["severity"] != "error" for f in about), about
    if how == "crash":
        assert [f["code"] for f in about] == ["CD318"] and "does not load" in about[0]["detail"], about
    else:
        said = found(report, "CD312")
        assert said["severity"] == "warning" and "no program started here loads this copy" in said["proof"], said
    every_error_seen_or_rule(report)


# --- --deep: the error is what the framework met first --------------------------------------------------------------

WHEEL = "/opt/venv/lib/python3.12/site-packages/nvidia/cudnn/lib"
GRAPH = "/home/me/where/libcudnn_graph.so.9"
TORCH_SAID = ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (9, 19, 0) but found "
              "runtime version (9, 14, 0). PyTorch already comes bundled with cuDNN.")


def chain_report(deep_error: str):  # type: ignore[no-untyped-def]
    """Round nineteen's s19-graph-osabi-freebsd as the H100's loading child reported it (tests/test_first_refusal.py),
    with torch's own words under --deep (its version check met 9.14: cuDNN had gone on with the system's graph library
    after the loader refused the one first on the path)."""
    from cudnn_doctor.model import Framework, Host, LoadedCudnn, ProcessView, Report, SubLibrary, Tool

    said = (f"torch: cudnnCnnVersionCheck -> the loader refuses {WHEEL}/libcudnn_cnn.so.9: {GRAPH}: ELF file OS ABI "
            "invalid (CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED)")
    cnn = SubLibrary("libcudnn_cnn.so.9", f"{WHEEL}/libcudnn_cnn.so.9", "9.19.0",
                     f"not loadable: {said.split(' -> the loader refuses ', 1)[1]}", rarely_used=True, seen=said)
    loaded = LoadedCudnn("torch", f"{WHEEL}/libcudnn.so.9", "9.14.0", "RUNPATH", (cnn,), None,
                         f"{WHEEL}/libcudnn.so.9", observed=True)
    torch = Framework(name="torch", version="2.11.0+cu130", cuda_built_for="13.0", cudnn_expected="9.19.0",
                      cudnn_used=f"{WHEEL}/libcudnn.so.9", found_via="dist-info", location="/opt/venv/torch",
                      details={"deep": {"error": deep_error}})
    return Report(tool=Tool("cudnn-doctor", "0"), host=Host("linux", "x86_64", "3.12", "node"),
                  process=ProcessView(cudnn=(loaded,)), frameworks=[torch]), cnn


def judged(report, findings, named):  # type: ignore[no-untyped-def]
    """What rules.evaluate does after the rules: the chains, --deep's evidence, then errors held to evidence."""
    from cudnn_doctor.rules import hold_to_evidence
    from cudnn_doctor.rules.chains import first_refusal
    from cudnn_doctor.rules.process_env import with_evidence

    return hold_to_evidence(report, with_evidence(report, first_refusal(report, findings), named))


def test_under_deep_a_consequence_of_a_refusal_is_explained_through_the_refusal() -> None:
    """torch's words under --deep name the release it met (explain reads CD321, whose kin are CD408 and CD305): the
    findings that say so follow from the loader's refusal of the graph library. The refusal is the error, quoting
    torch's words too; CD408 and CD305 stay warnings that follow from it. Before: CD408 and CD305 were made errors
    again by torch's words, beside CD308 (errors of another cause than the one that broke the program)."""
    from cudnn_doctor.codes import finding as made

    report, cnn = chain_report(TORCH_SAID)
    front = f"{WHEEL}/libcudnn.so.9"
    findings = [made("CD305", subject=front, library=front, version="9.14.0", mismatched="libcudnn_ops.so.9"),
                made("CD408", subject=front, framework="PyTorch", framework_version="2.11.0", expected="9.19.0",
                     found="9.14.0"),
                made("CD319", subject=cnn.path, framework="torch", library=front, version="9.14.0",
                     sublibrary="libcudnn_cnn.so.9", problem="is not loadable", why="only the legacy API loads it",
                     loaded_library=front)]
    out = judged(report, findings, {"torch": ("CD321",)})
    errors = [f for f in out if f.severity == "error"]
    assert [(f.code, f.values.get("sublibrary_file")) for f in errors] == [("CD308", GRAPH)], out
    assert errors[0].evidence == "seen" and "PyTorch under --deep" in errors[0].proof, errors[0]
    following = {f.code: f for f in out if f.values.get("follows") == f"CD308 {GRAPH}"}
    assert set(following) == {"CD305", "CD408", "CD319"} and all(f.severity == "warning"
                                                                 for f in following.values()), out


def test_under_deep_a_read_finding_tied_only_by_kinship_is_behind_what_the_words_name() -> None:
    """torch's words under --deep name a file the loader refused (a Git LFS pointer where a sub-library should be,
    round fifteen's s15-adv-lfs-first): the finding about that file is what torch met. A finding only read from the
    files about torch (CD408 of a copy no child was seen mapping) is behind it: a warning that says so, not an
    error of its own. Before: both errors."""
    from cudnn_doctor.codes import finding as made
    from cudnn_doctor.model import Framework, Host, ProcessView, Report, Tool

    adv = f"{WHEEL}/libcudnn_adv.so.9"
    words = (f"Could not load library libcudnn_adv.so.9. Error: {adv}: invalid ELF header\n"
             "RuntimeError: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED")
    torch = Framework(name="torch", version="2.11.0+cu130", cuda_built_for="13.0", cudnn_expected="9.19.0",
                      cudnn_used=f"{WHEEL}/libcudnn.so.9", found_via="dist-info", location="/opt/venv/torch",
                      details={"deep": {"error": words}})
    report = Report(tool=Tool("cudnn-doctor", "0"), host=Host("linux", "x86_64", "3.12", "node"),
                    process=ProcessView(), frameworks=[torch])
    findings = [made("CD308", subject=adv, library=adv, arch="this machine", error="invalid ELF header",
                     version_hint="9"),
                made("CD408", subject=f"{WHEEL}/libcudnn.so.9", framework="PyTorch", framework_version="2.11.0",
                     expected="9.19.0", found="9.14.0", evidence="read")]
    out = {f.code: f for f in judged(report, findings, {"torch": ("CD308",)})}
    assert out["CD308"].severity == "error" and out["CD308"].evidence == "seen", out
    assert out["CD408"].severity == "warning" and out["CD408"].evidence == "read", out
    assert "behind what PyTorch met first under --deep (CD308" in out["CD408"].proof, out["CD408"]


def test_the_plan_treats_the_error_first() -> None:
    """The plan's first step treats what the program met first (the error), then what is behind it (warnings), in
    the treatments' own order otherwise. Before: the treatments' order alone, whatever their severity."""
    from cudnn_doctor.codes import finding as made
    from cudnn_doctor.model import Host, Report, Tool
    from cudnn_doctor.plan.planner import Setting, make_plan
    from cudnn_doctor.rules import hold_to_evidence

    report = Report(tool=Tool("cudnn-doctor", "0"), host=Host("linux", "x86_64", "3.12", "node"))
    behind = made("CD303", evidence="read", subject="/usr/lib/libcudnn.so.9", header_path="/usr/include/cudnn_version.h",
                  header_version="9.1.0", library="/usr/lib/libcudnn.so.9", version="9.14.0", prefix="/usr")
    first = made("CD110", subject="libcuda.so.1", evidence="seen", detail="cuInit answered CUDA_ERROR_NOT_INITIALIZED")
    plan = make_plan(report, hold_to_evidence(report, [behind, first]), Setting(home="/root"))
    assert plan.actions[0].resolves == ("CD110",) and any("CD303" in a.resolves for a in plan.actions[1:]), plan


# --- a cuDNN sub-library preloaded into every program: the one cause of what follows -------------------------------

def test_a_preloaded_sublibrary_of_another_release_is_the_one_error_and_the_one_step(machine: Machine,
                                                                                      tmp_path: Path) -> None:
    """LD_PRELOAD of another release's libcudnn_adv.so.9 (9.0 beside torch's 9.1; round fifteen's GPU set: the system's
    9.14 adv failed torch 2.11; round seventeen's s17-preload-relative-graph the same with the graph library): the
    preload (CD317, a rule) is the one error; the preloaded copy's own missing files and the sub-library of another
    release torch's copy then gets follow from it, warnings treated by its one step (the entry out of LD_PRELOAD).
    Before: CD304 (seen) an error beside CD317, and CD305's own step reinstalled torch's whole wheel."""
    from tests.test_process_env import check_after, plan_lines

    gpu_machine(machine, tmp_path, gpus=1)
    install_torch(python_env(machine, tmp_path))  # built with 9.1.0 (its pinned wheel)
    other = tmp_path / "cudnn-90000"
    fake_cudnn(other, version=90000, sublibraries=CUDNN9)
    entry = str(other / "libcudnn_adv.so.9")
    machine.env["LD_PRELOAD"] = entry
    report = machine.check_json()
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert [(f["code"], f["subject"]) for f in errors] == [("CD317", entry)], errors
    following = [f for f in report["findings"] if f["detail"].startswith(f"Follows from LD_PRELOAD's {entry} (CD317)")]
    assert {"CD304", "CD305"} <= {f["code"] for f in following}, report["findings"]
    assert all(f["severity"] == "warning" for f in following), following
    every_error_seen_or_rule(report)
    plan = machine.run("fix", "--json").json
    [step] = [a for a in plan["actions"] if "CD317" in a["resolves"]]
    assert plan["actions"][0] == step and "CD305" in step["resolves"], plan["actions"]
    assert not [a for a in plan["actions"] if "CD305" in a["resolves"] and a is not step], plan["actions"]
    assert not {"CD317", "CD305"} & {f["code"] for f in check_after(machine, plan_lines(machine))["findings"]}


# --- a toolkit's runtime no program here finds -------------------------------------------------------------------

@pytest.mark.parametrize("on_path", [False, True])
def test_a_toolkit_runtime_that_does_not_load_is_an_error_only_where_a_program_finds_it(machine: Machine,
                                                                                        tmp_path: Path,
                                                                                        on_path: bool) -> None:
    """A CUDA 13 toolkit under /usr/local whose libcudart.so.13 is a Git LFS pointer (text): a child cannot load it
    (seen). Where its folder is on no path the loader searches, no program here gets it (torch brings its own, nvcc
    links the runtime statically by default): a warning that says so. On LD_LIBRARY_PATH, a program asking for it by
    name gets it: the error stands. Before: an error either way."""
    gpu_machine(machine, tmp_path, gpus=1)
    toolkit = make_toolkit(machine.root, "13.0.2", 13000)
    runtime = toolkit / "lib64" / "libcudart.so.13"
    runtime.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 1\n")
    if on_path:
        machine.add_library_path(toolkit / "lib64")
    report = machine.check_json()
    said = [f for f in report["findings"] if f["code"] == "CD203" and str(runtime) in (f.get("subject") or "")]
    if on_path:  # and the loader-by-name warning of the file on LD_LIBRARY_PATH beside it
        assert [f["evidence"] for f in said if f["severity"] == "error"] == ["seen"], said
    else:
        assert [f["severity"] for f in said] == ["warning"], said
        assert "no program started here finds it" in said[0]["proof"], said
    every_error_seen_or_rule(report)


def test_a_java_projects_cudnn_judged_from_the_loaders_model_is_read(machine: Machine) -> None:
    """A DL4J project (Gradle, nd4j-cuda-10.2, which needs cuDNN 7.6) on a machine whose CUDA 10.2 toolkit holds
    cuDNN 7.4.1: which copy the JVM's JavaCPP presets load is the doctor's model of the loader, and no child runs a
    JVM here: CD408 read, a warning. Before: an error with rule evidence."""
    from tests.test_dl4j import FIXTURES, toolkit

    cuda = toolkit(machine, "10.2.89", 10020)
    fake_cudnn(cuda / "lib64", version=7401, cudart=10020)
    report = machine.check_json("--project", str(FIXTURES / "gradle-kotlin-cuda"))
    said = found(report, "CD408")
    assert said["severity"] == "warning" and said["evidence"] == "read" and "7.4.1" in said["detail"], said
    every_error_seen_or_rule(report)
