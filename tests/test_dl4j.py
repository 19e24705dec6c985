"""`check --project` on DL4J projects shaped like real ones (tests/fixtures/dl4j/README.md names each model).

Each test runs the CLI as a user would and reads what it says about the project: the DL4J version,
the backend, its CUDA, the cuDNN it needs, and whether this machine has it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.fakes.build import fake_cudart, fake_cudnn, fake_nvml


@pytest.fixture
def machine(machine_in_process: Machine) -> Machine:
    """The CLI runs in the test's own process (conftest.run_in_process): nothing here needs a process of its own."""
    return machine_in_process

FIXTURES = Path(__file__).parent / "fixtures" / "dl4j"


def toolkit(machine: Machine, version: str, runtime: int) -> Path:
    """A CUDA toolkit in the machine's /usr/local/cuda-X.Y."""
    folder = machine.root / "usr" / "local" / f"cuda-{'.'.join(version.split('.')[:2])}"
    (folder / "include").mkdir(parents=True, exist_ok=True)
    (folder / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": version}}))
    fake_cudart(folder / "lib64", runtime=runtime)
    return folder


def dl4j(report: dict) -> list[dict]:
    return [f for f in report["frameworks"] if f["name"] == "dl4j"]


def by_artifact(report: dict) -> dict[str, dict]:
    return {f["details"]["artifact"]: f for f in dl4j(report)}


def found(report: dict, code: str) -> list[dict]:
    return [f for f in report["findings"] if f["code"] == code]


def test_multi_module_root_follows_modules_profiles_and_the_reactor(machine: Machine) -> None:
    report = machine.check_json("--project", str(FIXTURES / "beta7-multi-module"))
    frameworks = by_artifact(report)
    assert set(frameworks) == {"nd4j-native-platform", "nd4j-native", "nd4j-cuda-10.2-platform"}
    cpu = frameworks["nd4j-native-platform"]
    # declared in shared-utilities, reaching dl4j-examples through its dependency on that module
    assert cpu["version"] == "1.0.0-beta7" and cpu["cuda_built_for"] is None
    assert cpu["details"]["modules"] == ["shared-utilities", "dl4j-examples"]
    # the module that overrides the parent's ${nd4j.backend}, listed only in OS-activated profiles,
    # its version from <dependencyManagement> (which names three CUDA backends: only one is used)
    cuda = frameworks["nd4j-cuda-10.2-platform"]
    assert (cuda["version"], cuda["cuda_built_for"], cuda["cudnn_expected"]) == ("1.0.0-beta7", "10.2", "7.6")
    assert cuda["details"]["modules"] == ["cuda-examples"]
    assert cuda["details"]["profile"] == {"id": "linux", "activation": "on OS linux", "active": True}
    assert cuda["details"]["allow_multi_gpu"] and not cuda["details"]["graves_lstm"]
    [profile] = found(report, "CD436")
    assert "profile linux (on OS linux), which is active here" in profile["detail"]
    assert {f["detail"].split("(CPU backend ")[1].split(":")[0] for f in found(report, "CD406")} == {
        "nd4j-native-platform", "nd4j-native"}
    assert all("will not use the GPU or cuDNN" in f["detail"] and "nd4j-cuda-10.2-platform" in f["fix"]
               for f in found(report, "CD406"))
    # beta7 uses cuDNN only through deeplearning4j-cuda-10.2, which the module does not have
    [no_cudnn] = found(report, "CD432")
    assert "deeplearning4j-cuda-10.2" in no_cudnn["detail"] and no_cudnn["refs"]
    assert "org.deeplearning4j:deeplearning4j-cuda-10.2:1.0.0-beta7" in no_cudnn["fix"]
    [no_toolkit] = found(report, "CD405")
    assert "needs CUDA 10.2 and cuDNN 7.6" in no_toolkit["detail"]


def test_cuda_091_project_with_graves_lstm_and_the_cudnn_this_machine_has(machine: Machine) -> None:
    cuda = toolkit(machine, "8.0.61", 8000)
    fake_cudnn(cuda / "lib64", version=6021, cudart=8000)
    report = machine.check_json("--project", str(FIXTURES / "cuda-0.9.1"))
    [framework] = dl4j(report)
    assert (framework["version"], framework["details"]["artifact"], framework["cuda_built_for"],
            framework["cudnn_expected"]) == ("0.9.1", "nd4j-cuda-8.0-platform", "8.0", "6.0")
    assert "CD405" not in codes(report)  # CUDA 8.0 is there
    [graves] = found(report, "CD433")
    assert graves["subject"].endswith("SequenceModel.java:10") and "LSTM" in graves["fix"]
    [no_cudnn] = found(report, "CD432")
    assert "deeplearning4j-cuda-8.0:0.9.1" in no_cudnn["fix"]


def test_m1_classifier_uses_cudnn_and_finds_the_one_installed(machine: Machine) -> None:
    cuda = toolkit(machine, "11.2.2", 11020)
    fake_cudnn(cuda / "lib64", version=8106, cudart=11020)
    report = machine.check_json("--project", str(FIXTURES / "m1-cudnn-classifier"))
    [framework] = dl4j(report)
    assert (framework["version"], framework["cuda_built_for"], framework["cudnn_expected"]) == ("1.0.0-M1", "11.2",
                                                                                             "8.1")
    assert framework["details"]["classifiers"] == ["linux-x86_64-cudnn"]
    assert framework["cudnn_used"] == str(cuda / "lib64" / "libcudnn.so.8")
    assert not codes(report) & {"CD401", "CD405", "CD408", "CD432"}
    text = machine.run("check", "--project", str(FIXTURES / "m1-cudnn-classifier")).stdout
    assert "dl4j 1.0.0-M1, built for CUDA 11.2, expects cuDNN 8.1, loads " + str(cuda / "lib64") in text


def test_m1_classifier_without_cudnn_on_this_machine(machine: Machine) -> None:
    toolkit(machine, "11.2.2", 11020)
    report = machine.check_json("--project", str(FIXTURES / "m1-cudnn-classifier"))
    [missing] = found(report, "CD401")
    assert "cuDNN 8.1" in missing["detail"] and "libcudnn.so.8" in missing["detail"]
    assert "cudnn-doctor install" in missing["fix"]


def test_wrong_cudnn_version_for_the_backend(machine: Machine) -> None:
    cuda = toolkit(machine, "10.2.89", 10020)
    fake_cudnn(cuda / "lib64", version=7401, cudart=10020)
    report = machine.check_json("--project", str(FIXTURES / "gradle-kotlin-cuda"))
    [wrong] = found(report, "CD408")
    assert "accepts cuDNN 7.6" in wrong["detail"] and "7.4.1" in wrong["detail"]


def test_cpu_only_project_with_a_commented_out_cuda_line(machine: Machine) -> None:
    toolkit(machine, "11.6.2", 11060)
    report = machine.check_json("--project", str(FIXTURES / "m2-cpu-only"))
    [framework] = dl4j(report)
    assert (framework["version"], framework["details"]["artifact"], framework["cuda_built_for"]) == (
        "1.0.0-M2.1", "nd4j-native", None)
    [cpu] = found(report, "CD406")
    assert "CPU backend nd4j-native: will not use the GPU or cuDNN" in cpu["detail"]
    # the one for the installed CUDA, in the form the project writes its backend (nd4j-native -> nd4j-cuda-11.6),
    # as an edit of the line that names it (the plan's diff; tests/test_fix.py applies it)
    assert "`<nd4j.backend>nd4j-cuda-11.6</nd4j.backend>`" in cpu["fix"] and cpu["refs"]


def test_gradle_groovy_with_map_notation_and_classifiers(machine: Machine) -> None:
    report = machine.check_json("--project", str(FIXTURES / "gradle-android"))
    [framework] = dl4j(report)
    assert framework["found_via"] == "build.gradle" and framework["details"]["modules"] == ["app"]
    assert (framework["version"], framework["details"]["artifact"]) == ("1.0.0-M2", "nd4j-native")
    assert framework["details"]["classifiers"] == ["android-arm64", "android-x86_64"]
    assert codes(report) & {"CD406"}


def test_gradle_kotlin_with_typed_val_and_cudnn_helper(machine: Machine) -> None:
    cuda = toolkit(machine, "10.2.89", 10020)
    fake_cudnn(cuda / "lib64", version=7605, cudart=10020)
    report = machine.check_json("--project", str(FIXTURES / "gradle-kotlin-cuda"))
    [framework] = dl4j(report)  # the commented-out and the test-only backends are not used
    assert framework["found_via"] == "build.gradle.kts"
    assert (framework["version"], framework["cuda_built_for"], framework["cudnn_expected"]) == ("1.0.0-beta7", "10.2",
                                                                                             "7.6")
    assert framework["details"]["cudnn_helpers"] == ["10.2"]
    assert framework["cudnn_used"] == str(cuda / "lib64" / "libcudnn.so.7")
    assert not codes(report) & {"CD401", "CD405", "CD406", "CD408", "CD432"}


def test_several_cuda_backends_the_installed_one_wins(machine: Machine) -> None:
    toolkit(machine, "10.2.89", 10020)
    report = machine.check_json("--project", str(FIXTURES / "two-cuda-backends"))
    assert set(by_artifact(report)) == {"nd4j-cuda-10.1-platform", "nd4j-cuda-10.2-platform"}
    [several] = found(report, "CD435")
    assert "ND4J loads one: nd4j-cuda-10.2-platform, because CUDA 10.1 is not installed here" in several["detail"]
    assert several["refs"] and "BACKEND_PRIORITY_GPU" in several["fix"]
    assert "CD405" not in codes(report)  # the loser's missing CUDA is not a problem


def test_several_gpus_without_allow_multi_gpu(machine: Machine, tmp_path: Path) -> None:
    fake_nvml(tmp_path / "nvml", gpus=2)
    machine.add_library_path(tmp_path / "nvml")
    report = machine.check_json("--project", str(FIXTURES / "cuda-0.9.1"))
    [advice] = found(report, "CD434")
    assert "2 GPUs" in advice["detail"] and "allowMultiGPU(true)" in advice["fix"]
    report = machine.check_json("--project", str(FIXTURES / "beta7-multi-module"))
    assert "CD434" not in codes(report)  # its CUDA module calls allowMultiGPU(true)


def test_default_project_is_the_real_working_folder_not_a_stale_pwd(machine: Machine) -> None:
    machine.cwd = FIXTURES / "m2-cpu-only"
    machine.env["PWD"] = str(FIXTURES / "cuda-0.9.1")
    report = machine.check_json()
    assert [f["version"] for f in dl4j(report)] == ["1.0.0-M2.1"]


def test_project_must_be_a_project_or_a_folder_of_them(machine: Machine, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a build file")
    (tmp_path / "empty" / "src").mkdir(parents=True)
    for given, why in ((str(tmp_path / "missing"), "no such file or folder"),
                       (str(tmp_path / "notes.txt"), "not a Maven or Gradle build file"), ("", "empty"),
                       (str(tmp_path / "empty"), "no pom.xml or Gradle build in it, nor in its subfolders")):
        result = machine.run("check", "--project", given)
        assert result.exit_code == 2 and why in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_project_takes_a_pom_or_a_gradle_build_file(machine: Machine) -> None:
    from_file = machine.check_json("--project", str(FIXTURES / "m2-cpu-only" / "pom.xml"))
    assert from_file["frameworks"] == machine.check_json("--project", str(FIXTURES / "m2-cpu-only"))["frameworks"]
    assert [f["version"] for f in dl4j(from_file)] == ["1.0.0-M2.1"]
    [kotlin] = [p for p in (FIXTURES / "gradle-kotlin-cuda").iterdir() if p.name.startswith("build.gradle")]
    gradle = machine.check_json("--project", str(kotlin))
    assert dl4j(gradle) and {f["details"]["tool"] for f in dl4j(gradle)} == {"gradle"}


def test_a_folder_of_projects_reads_those_in_its_subfolders(machine: Machine, tmp_path: Path) -> None:
    """A repository whose projects are in subfolders: each is read, and where it is shows."""
    repository = tmp_path / "repository"
    for name in ("m2-cpu-only", "cuda-0.9.1"):
        shutil.copytree(FIXTURES / name, repository / "services" / name)
    (repository / ".git" / "deep").mkdir(parents=True)  # hidden folders are not searched
    report = machine.check_json("--project", str(repository))
    projects = {Path(f["details"]["project"]).name: f["version"] for f in dl4j(report)}
    assert projects == {"m2-cpu-only": "1.0.0-M2.1", "cuda-0.9.1": "0.9.1"}, projects
    assert "CD430" not in codes(report)


def test_more_projects_than_are_read_are_named_in_a_finding(machine: Machine, tmp_path: Path) -> None:
    for index in range(10):
        shutil.copytree(FIXTURES / "m2-cpu-only", tmp_path / "many" / f"service-{index:02}")
    report = machine.check_json("--project", str(tmp_path / "many"))
    assert len({f["details"]["project"] for f in dl4j(report) if not f["details"].get("unread")}) == 8
    [unread] = found(report, "CD430")
    assert "2 more project(s) found in its subfolders than the 8 read (service-08, service-09)" in unread["detail"]
    assert "--project" in unread["fix"] and unread["subject"] == str(tmp_path / "many")


def test_module_backend_only_in_an_inactive_profile(machine: Machine, tmp_path: Path) -> None:
    (tmp_path / "pom.xml").write_text("""<project><modelVersion>4.0.0</modelVersion>
      <groupId>g</groupId><artifactId>a</artifactId><version>1</version>
      <dependencies><dependency><groupId>org.nd4j</groupId><artifactId>nd4j-native-platform</artifactId>
        <version>1.0.0-beta6</version></dependency></dependencies>
      <profiles><profile><id>gpu</id>
        <dependencies><dependency><groupId>org.nd4j</groupId><artifactId>nd4j-cuda-10.1-platform</artifactId>
          <version>1.0.0-beta6</version></dependency></dependencies></profile></profiles></project>""")
    report = machine.check_json("--project", str(tmp_path))
    frameworks = by_artifact(report)
    assert frameworks["nd4j-cuda-10.1-platform"]["details"]["profile"] == {
        "id": "gpu", "activation": "only with -P gpu", "active": False}
    [profile] = found(report, "CD436")
    assert "not active here" in profile["detail"] and "mvn -P gpu" in profile["fix"]
    assert "CD405" not in codes(report)  # not used unless -P gpu


def test_dl4j_without_backend(machine: Machine, tmp_path: Path) -> None:
    (tmp_path / "pom.xml").write_text("""<project><groupId>g</groupId><artifactId>a</artifactId><version>1</version>
      <dependencies><dependency><groupId>org.deeplearning4j</groupId><artifactId>deeplearning4j-core</artifactId>
        <version>1.0.0-beta7</version></dependency></dependencies></project>""")
    report = machine.check_json("--project", str(tmp_path))
    [missing] = found(report, "CD437")
    assert "deeplearning4j-core 1.0.0-beta7" in missing["detail"] and "nd4j-native-platform" in missing["fix"]


def test_no_project_here_is_not_a_dl4j_project(machine: Machine, tmp_path: Path) -> None:
    """Run without --project in a folder that is no project: quiet (--project at it is a usage error, above)."""
    (tmp_path / "empty").mkdir()
    machine.cwd = tmp_path / "empty"
    report = machine.check_json()
    assert dl4j(report) == [] and not [c for c in codes(report) if c.startswith("CD43")]


def test_other_frameworks_rules_do_not_see_maven_problems(machine: Machine) -> None:
    report = machine.check_json("--project", str(FIXTURES / "beta7-multi-module"))
    assert "CD430" not in codes(report) and "CD431" not in codes(report)
    assert os.path.isabs(dl4j(report)[0]["location"])


def test_missing_module_and_a_parent_that_is_not_the_pom_above(machine: Machine, tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "pom.xml").write_text("""<project><groupId>g</groupId><artifactId>root</artifactId><version>2</version>
      <properties><nd4j.backend>nd4j-cuda-10.2-platform</nd4j.backend></properties>
      <modules><module>app</module><module>gone</module></modules></project>""")
    (tmp_path / "app" / "pom.xml").write_text("""<project><artifactId>app</artifactId>
      <parent><groupId>g</groupId><artifactId>root</artifactId><version>1</version></parent>
      <dependencies><dependency><groupId>org.nd4j</groupId><artifactId>${nd4j.backend}</artifactId>
        <version>1.0.0-beta7</version></dependency></dependencies></project>""")
    report = machine.check_json("--project", str(tmp_path))
    [gone] = found(report, "CD430")
    assert "it lists the module 'gone'" in gone["detail"] and "<modules>" in gone["fix"]
    [parent] = found(report, "CD438")
    assert "its parent g:root:1 is not the pom at" in parent["detail"] and "(g:root:2)" in parent["detail"]
    # without its parent's properties, ${nd4j.backend} names no backend: nothing is guessed
    assert [f["details"]["artifact"] for f in dl4j(report)] == [None]


def test_a_profile_that_switches_the_backend_property(machine: Machine, tmp_path: Path) -> None:
    (tmp_path / "pom.xml").write_text("""<project><groupId>g</groupId><artifactId>a</artifactId><version>1</version>
      <properties><nd4j.backend>nd4j-native-platform</nd4j.backend><nd4j.version>1.0.0-beta7</nd4j.version>
        <cuda>${env.FIXTURE_CUDA}</cuda></properties>
      <dependencies><dependency><groupId>org.nd4j</groupId><artifactId>${nd4j.backend}</artifactId>
        <version>${nd4j.version}</version></dependency></dependencies>
      <profiles><profile><id>gpu</id><activation><property><name>gpu</name></property></activation>
        <properties><nd4j.backend>nd4j-cuda-${cuda}-platform</nd4j.backend></properties></profile></profiles>
    </project>""")
    machine.env["FIXTURE_CUDA"] = "10.1"
    report = machine.check_json("--project", str(tmp_path))
    frameworks = by_artifact(report)
    assert frameworks["nd4j-native-platform"]["details"]["profile"] is None
    gpu = frameworks["nd4j-cuda-10.1-platform"]  # ${env.FIXTURE_CUDA} read as Maven reads it
    assert (gpu["version"], gpu["cuda_built_for"], gpu["details"]["profile"]) == (
        "1.0.0-beta7", "10.1", {"id": "gpu", "activation": "with -Dgpu", "active": False})
    [profile] = found(report, "CD436")
    assert "nd4j-cuda-10.1-platform" in profile["detail"] and "not active here" in profile["detail"]
    assert len(found(report, "CD406")) == 1 and "CD405" not in codes(report)


def test_gradle_kotlin_multi_project_with_extra_properties(machine: Machine, tmp_path: Path) -> None:
    (tmp_path / "settings.gradle.kts").write_text('rootProject.name = "x"\ninclude("app", ":lib:core")\n')
    (tmp_path / "build.gradle.kts").write_text('extra["dl4jVersion"] = "1.0.0-M1.1"\nval cuda by extra("11.2")\n')
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "build.gradle.kts").write_text(
        'dependencies {\n    implementation(group = "org.nd4j", name = "nd4j-cuda-$cuda",\n'
        '        version = rootProject.extra["dl4jVersion"] as String, classifier = "linux-x86_64-cudnn")\n'
        '    implementation("org.nd4j:nd4j-cuda-11.2:${property("dl4jVersion")}")\n}\n')
    (tmp_path / "lib" / "core").mkdir(parents=True)
    (tmp_path / "lib" / "core" / "build.gradle").write_text(
        "ext { v = '1.0.0-M1.1' }\ndependencies { api \"org.nd4j:nd4j-native:${v}\" }\n")
    report = machine.check_json("--project", str(tmp_path))
    frameworks = {f["details"]["modules"][0]: f for f in dl4j(report)}
    assert set(frameworks) == {"app", "lib/core"}
    app = frameworks["app"]
    assert (app["version"], app["details"]["artifact"], app["cuda_built_for"]) == ("1.0.0-M1.1", "nd4j-cuda-11.2",
                                                                                 "11.2")
    assert app["details"]["classifiers"] == ["linux-x86_64-cudnn"]
    assert (frameworks["lib/core"]["version"], frameworks["lib/core"]["details"]["artifact"]) == (
        "1.0.0-M1.1", "nd4j-native")


def test_every_release_in_the_data_says_which_artifact_brings_cudnn() -> None:
    """compat/dl4j.toml: each release with a backend row has a cuDNN route, and each route names its source."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    data = tomllib.loads((Path(__file__).parents[1] / "compat" / "dl4j.toml").read_text())
    routed = {release for route in data["cudnn_route"] for release in route["releases"]}
    assert {row["version"] for row in data["backend"]} <= routed
    assert all("deeplearning4j-gitbook-sync" in r["source"] or "deeplearning4j-docs" in r["source"]
               for r in data["cudnn_route"])
    beta7 = next(r for r in data["cudnn_route"] if "1.0.0-beta7" in r["releases"])
    m1 = next(r for r in data["cudnn_route"] if "1.0.0-M1" in r["releases"])
    assert (beta7["helper"], beta7["classifier"]) == ("deeplearning4j-cuda-{cuda}", "")
    assert m1["classifier"] == "{os}-cudnn"
