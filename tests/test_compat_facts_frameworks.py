"""Known facts pinned in the frameworks' compatibility data (compat/{tensorflow,pytorch,theano,dl4j}.toml).

Each test's docstring names the source the fact was read from; the same source is cited in the row.
"""

from __future__ import annotations

from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

COMPAT = Path(__file__).resolve().parent.parent / "compat"
FILES = {
    "tensorflow": ("cudnn-doctor/compat/tensorflow/1", ("build", "and_cuda")),
    "pytorch": ("cudnn-doctor/compat/pytorch/1", ("build", "source_build")),
    "theano": ("cudnn-doctor/compat/theano/1", ("release",)),
    "dl4j": ("cudnn-doctor/compat/dl4j/1", ("backend",)),
}


def load(name: str) -> dict:
    with open(COMPAT / f"{name}.toml", "rb") as fh:
        return tomllib.load(fh)


def find(rows: list[dict], **match) -> dict:
    hits = [r for r in rows if all(r.get(k) == v for k, v in match.items())]
    assert len(hits) == 1, f"expected exactly one row matching {match}, got {len(hits)}"
    return hits[0]


# ---------------------------------------------------------------- structure


@pytest.mark.parametrize("name", sorted(FILES))
def test_schema_and_every_row_has_a_source(name):
    """Every row of every frameworks file has a non-empty `source` (DESIGN.md: every row names its source)."""
    data = load(name)
    schema, tables = FILES[name]
    assert data["schema"] == schema
    count = 0
    for table in tables:
        for row in data.get(table, []):
            count += 1
            assert isinstance(row.get("source"), str) and row["source"].strip(), (table, row)
    assert count > 0


@pytest.mark.parametrize("name", sorted(FILES))
def test_unknown_values_carry_a_note(name):
    """Rows that hold "unknown" in a value explain why in a `note` (brief: never guess; write unknown + note)."""
    data = load(name)
    for table in FILES[name][1]:
        for row in data.get(table, []):
            values = [v for k, v in row.items() if k not in ("source", "note")]
            flat = []
            for v in values:
                flat.extend(v if isinstance(v, list) else [v])
            if "unknown" in flat:
                assert row.get("note"), (table, row)


@pytest.mark.parametrize("name", sorted(FILES))
def test_rules_have_sources(name):
    """Each [rules] entry `x` comes with an `x_source` naming where it was read."""
    rules = load(name).get("rules", {})
    assert rules
    for key in rules:
        if key.endswith("_source") or key.endswith("_detail"):
            continue
        assert rules.get(f"{key}_source"), key


# ---------------------------------------------------------------- TensorFlow


def test_tf_2_15_linux():
    """tensorflow/docs site/en/install/source.md, Linux GPU table: tensorflow-2.15.0 -> cuDNN 8.9, CUDA 12.2, Clang 16.0.0, Bazel 6.1.0."""
    row = find(load("tensorflow")["build"], version="2.15.0", os="linux")
    assert (row["cudnn"], row["cuda"], row["compiler"], row["build_tools"]) == (
        "8.9",
        "12.2",
        "Clang 16.0.0",
        "Bazel 6.1.0",
    )
    assert row["package"] == "tensorflow"


def test_tf_2_18_moves_to_cudnn_9():
    """tensorflow/docs source.md, Linux GPU table: tensorflow-2.17.0 cuDNN 8.9 / CUDA 12.3, tensorflow-2.18.0 cuDNN 9.3 / CUDA 12.5."""
    rows = load("tensorflow")["build"]
    assert (find(rows, version="2.17.0", os="linux")["cudnn"], find(rows, version="2.17.0", os="linux")["cuda"]) == (
        "8.9",
        "12.3",
    )
    assert (find(rows, version="2.18.0", os="linux")["cudnn"], find(rows, version="2.18.0", os="linux")["cuda"]) == (
        "9.3",
        "12.5",
    )


def test_tf_1_x_uses_tensorflow_gpu_and_the_exact_runtime_it_links():
    """tensorflow/docs source.md, Linux GPU table: tensorflow_gpu-1.12.0 -> cuDNN "7", CUDA "9" in the table's spelling;
    the binary links the 9.0 sonames (tensorflow/docs gpu.md 'TensorFlow supports CUDA 9.0', tensorflow/tensorflow#15604:
    libcublas.so.9.0 not found beside CUDA 9.2), so the row is CUDA 9.0, not the range 9.x (issue 41)."""
    row = find(load("tensorflow")["build"], version="1.12.0", os="linux")
    assert (row["package"], row["cudnn"], row["cuda"]) == ("tensorflow_gpu", "7", "9.0")
    assert "libcudart.so.9.0" in row["source"]


def test_tf_windows_2_10_last_native_gpu():
    """tensorflow/docs site/en/install/source_windows.md, GPU table and its note: tensorflow_gpu-2.10.0 (MSVC 2019, cuDNN 8.1, CUDA 11.2) is the last native-Windows GPU build."""
    data = load("tensorflow")
    row = find(data["build"], version="2.10.0", os="windows")
    assert (row["package"], row["compiler"], row["cudnn"], row["cuda"]) == (
        "tensorflow_gpu",
        "MSVC 2019",
        "8.1",
        "11.2",
    )
    assert data["rules"]["windows_native_gpu_last"] == "2.10.0"
    assert not [r for r in data["build"] if r["os"] == "windows" and r["version"].startswith("2.11")]


def test_tf_windows_1_12_differs_from_linux():
    """source_windows.md gives tensorflow_gpu-1.12.0 cuDNN 7.2 / CUDA 9.0, while the Linux table says 7 / 9."""
    row = find(load("tensorflow")["build"], version="1.12.0", os="windows")
    assert (row["cudnn"], row["cuda"]) == ("7.2", "9.0")


def test_tf_table_row_counts():
    """source.md Linux GPU table has 38 rows (tensorflow_gpu-1.0.0 .. tensorflow-2.21.0), macOS GPU 2, source_windows.md GPU 27;
    6 Linux patch releases (2.14.1 .. 2.19.1) come from their own PyPI wheels."""
    rows = load("tensorflow")["build"]
    counts = {o: sum(1 for r in rows if r["os"] == o) for o in ("linux", "windows", "macos")}
    assert counts == {"linux": 38 + 6, "windows": 27, "macos": 2}  # + patch releases read from their wheels


def test_tf_runtime_rule():
    """tensorflow/tensorflow stream_executor/cuda/cudnn_version.cc IsSourceCompatibleWithCudnnLibrary: same major, loaded minor >= compiled minor."""
    assert load("tensorflow")["rules"]["cudnn_runtime"] == "same-major-min-minor"


def test_tf_2_21_and_cuda_cudnn_requirement():
    """tensorflow_cpu-2.21.0 wheel METADATA (same setup.py): extra and-cuda requires nvidia-cudnn-cu12<10.0,>=9.3.0.75."""
    row = find(load("tensorflow")["and_cuda"], version="2.21.0")
    assert (row["cudnn_package"], row["cudnn_requirement"]) == ("nvidia-cudnn-cu12", ">=9.3.0.75,<10.0")


# ---------------------------------------------------------------- PyTorch


def test_torch_2_5_0_cu124():
    """pytorch/pytorch RELEASE.md Release Compatibility Matrix (2.5: CUDA 11.8, 12.1, 12.4, CUDNN 9.1.0.70); pytorch/test-infra 1969a06c8 'Release 2.5 Use pypi for cuda 12.4 builds'."""
    row = find(load("pytorch")["build"], version="2.5.0", cuda="12.4")
    assert (row["cudnn"], row["cudnn_package"], row["pypi_default"]) == ("9.1.0.70", "nvidia-cudnn-cu12", True)


def test_torch_2_14_1_pypi_wheel():
    """torch-2.14.1 manylinux wheel from PyPI: METADATA pins nvidia-cudnn-cu13==9.24.0.43 and torch/version.py says cuda '13.0'."""
    row = find(load("pytorch")["build"], version="2.14.1", cuda="13.0")
    assert (row["cudnn"], row["cudnn_package"], row["pypi_default"]) == ("9.24.0.43", "nvidia-cudnn-cu13", True)


def test_torch_2_1_to_2_3_matrix():
    """pytorch/pytorch RELEASE.md @ aa6104e2: 2.1-2.3 stable CUDA 11.8 with CUDNN 8.7.0.84, experimental CUDA 12.1 with CUDNN 8.9.2.26."""
    rows = load("pytorch")["build"]
    for v in ("2.1.0", "2.2.0", "2.3.1"):
        assert find(rows, version=v, cuda="11.8")["cudnn"] == "8.7.0.84"
        assert find(rows, version=v, cuda="12.1")["cudnn"] == "8.9.2.26"
        assert find(rows, version=v, cuda="12.1")["channel"] == "experimental"


def test_torch_1_13_pypi_wheel_uses_nvidia_cudnn_cu11():
    """RELEASE.md (1.13: experimental CUDA 11.7, CUDNN 8.5.0.96); pytorch PR #85097 (11.7 wheel without bundled cudnn); previous-versions.md ('Linux CUDA 11.7: pip install torch==1.13.1')."""
    row = find(load("pytorch")["build"], version="1.13.1", cuda="11.7")
    assert (row["cudnn"], row["cudnn_package"], row["pypi_default"]) == ("8.5.0.96", "nvidia-cudnn-cu11", True)


def test_torch_1_9_bundles_static_cudnn():
    """pytorch/builder release/1.9 common/install_cuda.sh (install_111: cudnn-11.1-linux-x64-v8.0.5.39) and manywheel/build.sh (USE_STATIC_CUDNN=1)."""
    row = find(load("pytorch")["build"], version="1.9.0", cuda="11.1")
    assert (row["cudnn"], row["cudnn_package"]) == ("8.0.5.39", "bundled")


def test_torch_1_0_0_conda_build_string():
    """moi90/pytorch_compute_capabilities table.md: pytorch-1.0.0-py3.7_cuda10.0.130_cudnn7.4.1_1."""
    row = find(load("pytorch")["build"], version="1.0.0", cuda="10.0")
    assert row["cudnn"] == "7.4.1"


def test_torch_pypi_default_is_unique_per_release():
    """pytorch/test-infra generate_binary_build_matrix.py: only one Linux CUDA build per release gets a plain `pip install`."""
    by_version: dict[str, int] = {}
    for row in load("pytorch")["build"]:
        if row["pypi_default"] is True:
            by_version[row["version"]] = by_version.get(row["version"], 0) + 1
    assert by_version and all(n == 1 for n in by_version.values())
    assert (
        "2.7.0" in by_version and find(load("pytorch")["build"], version="2.7.0", cuda="12.6")["pypi_default"] is True
    )


def test_torch_runtime_rule():
    """pytorch/pytorch torch/backends/cudnn/__init__.py _init(): same major; minor >= compiled for cuDNN >= 7; PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK skips it."""
    rules = load("pytorch")["rules"]
    assert rules["cudnn_runtime"].startswith("same-major")
    assert "PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK" in rules["cudnn_runtime_detail"]
    assert "91100" in rules["cudnn_runtime_detail"]


def test_torch_covers_every_minor_since_1_8():
    """Coverage check over the rows read from RELEASE.md, previous-versions.md, pytorch/builder and test-infra."""
    minors = {".".join(r["version"].split(".")[:2]) for r in load("pytorch")["build"]}
    expected = {f"1.{m}" for m in range(8, 14)} | {f"2.{m}" for m in range(0, 15)}
    assert expected <= minors


# ---------------------------------------------------------------- Theano


def test_theano_0_8_2_takes_cudnn_5():
    """Theano/Theano rel-0.8.2 theano/sandbox/cuda/__init__.py (min 4007, warning above 5100 'downgrading cuDNN to version 5'); seed 002 (Theano takes only cuDNN 5 when TensorFlow took 5.1)."""
    row = find(load("theano")["release"], version="0.8.2")
    assert "5.0" in row["cudnn"] and "5.1" in row["cudnn_warns"]
    assert row["cudnn_warn_int"]["sandbox_cuda"] == 5100


def test_theano_0_9_0_requires_v5_on_gpuarray():
    """Theano/Theano rel-0.9.0 theano/gpuarray/dnn.py _dnn_check_version: v < 5000 refused, v >= 5200 warns (5.1 final accepted)."""
    row = find(load("theano")["release"], version="0.9.0")
    assert row["cudnn"] == ["5"]
    assert (row["cudnn_min_int"]["gpuarray"], row["cudnn_warn_int"]["gpuarray"]) == (5000, 5200)


def test_theano_1_0_0_range():
    """Theano/Theano rel-1.0.0 theano/gpuarray/dnn.py: v < 5000 refused, v >= 7200 warns; Volta needs >= 7002."""
    row = find(load("theano")["release"], version="1.0.0")
    assert row["cudnn"] == ["5", "6", "7.0", "7.1"]
    assert row["cudnn_warn_int"]["gpuarray"] == 7200


# ---------------------------------------------------------------- DL4J


def test_dl4j_0_9_1_cudnn_6_only():
    """eclipse/deeplearning4j-docs cudnn.md @ 125555a68da7 ('only cuDNN 6.0 is supported', nd4j-cuda-7.5 / -8.0); seed 000."""
    rows = [r for r in load("dl4j")["backend"] if r["version"] == "0.9.1"]
    assert {r["artifact"] for r in rows} == {"nd4j-cuda-7.5", "nd4j-cuda-8.0"}
    assert {r["cudnn"] for r in rows} == {"6.0"}


def test_dl4j_beta7():
    """KonduitAI/deeplearning4j-gitbook-sync en-1.0.0-beta7 config/backends/config-cudnn.md: CUDA 10.0 (cuDNN 7.4), 10.1 (7.6), 10.2 (7.6), redist 10.2-7.6-1.5.3."""
    rows = {r["cuda"]: r for r in load("dl4j")["backend"] if r["version"] == "1.0.0-beta7"}
    assert {c: r["cudnn"] for c, r in rows.items()} == {"10.0": "7.4", "10.1": "7.6", "10.2": "7.6"}
    assert rows["10.2"]["redist"] == "org.bytedeco:cuda-platform-redist:10.2-7.6-1.5.3"


def test_dl4j_beta3_cuda_10_0():
    """eclipse/deeplearning4j-docs docs/_latest/deeplearning4j-config-cudnn.md @ 40e4cbe79d00: CUDA 10.0 -> cuDNN 7.3 (beta3 has CUDA 9.0, 9.2, 10.0)."""
    row = find(load("dl4j")["backend"], version="1.0.0-beta3", cuda="10.0")
    assert row["cudnn"] == "7.3"


def test_dl4j_m1_cuda_11_2():
    """KonduitAI/deeplearning4j-gitbook-sync en-1.0.0-m1 cudnn.md: 'if the cuda version is set to 11.2, you can expect us to support cudnn 8.1'."""
    row = find(load("dl4j")["backend"], version="1.0.0-M1", cuda="11.2")
    assert (row["artifact"], row["cudnn"]) == ("nd4j-cuda-11.2", "8.1")


def test_dl4j_rules():
    """Seed 000 and the DL4J cuDNN pages: GravesLSTM has no cuDNN path; NO_WORKSPACE reduces cuDNN memory use."""
    rules = load("dl4j")["rules"]
    assert "LSTM" in rules["graves_lstm"] and "NO_WORKSPACE" in rules["no_workspace"]
