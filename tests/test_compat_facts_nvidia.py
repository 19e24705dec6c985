"""Pin facts in compat/cuda.toml and compat/cudnn.toml that were read from NVIDIA sources.

Each test's docstring names the source the fact was read from. If a test fails after an edit to
the data, re-check the source before changing the test.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import tomllib
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parents[1]
CUDA_TOML = ROOT / "compat" / "cuda.toml"
CUDNN_TOML = ROOT / "compat" / "cudnn.toml"


@pytest.fixture(scope="module")
def cuda() -> dict:
    with CUDA_TOML.open("rb") as f:
        return tomllib.load(f)


@pytest.fixture(scope="module")
def cudnn() -> dict:
    with CUDNN_TOML.open("rb") as f:
        return tomllib.load(f)


def toolkit(data: dict, version: str) -> dict:
    rows = [t for t in data["toolkit"] if t["version"] == version]
    assert len(rows) == 1, f"expected exactly one toolkit row for {version}, got {len(rows)}"
    return rows[0]


def release(data: dict, version: str) -> dict:
    rows = [r for r in data["release"] if r["version"] == version]
    assert len(rows) == 1, f"expected exactly one release row for {version}, got {len(rows)}"
    return rows[0]


def variants(rel: dict) -> dict[str, dict]:
    return {v["cuda"]: v for v in rel.get("variant", [])}


# ---------------------------------------------------------------- structure


def test_schemas(cuda, cudnn):
    assert cuda["schema"] == "cudnn-doctor/compat/cuda/1"
    assert cudnn["schema"] == "cudnn-doctor/compat/cudnn/1"


def _all_rows(cuda: dict, cudnn: dict):
    for t in cuda["toolkit"]:
        yield "toolkit " + t["version"], t
    for m in cuda["minor_version_compatibility"]:
        yield f"minor_version_compatibility {m['major']}", m
    yield "forward_compatibility", cuda["forward_compatibility"]
    for g in cudnn["generation"]:
        yield f"generation {g['major']}", g
    for r in cudnn["release"]:
        yield "release " + r["version"], r


def test_every_row_has_a_source(cuda, cudnn):
    """Every row (toolkit, minor-version row, forward-compat, generation, release) names a non-empty source."""
    for name, row in _all_rows(cuda, cudnn):
        assert isinstance(row.get("source"), str) and row["source"].strip(), f"{name} has no source"
    for r in cudnn["release"]:
        for v in r.get("variant", []):
            # a variant may omit source when it is the release's source
            if "source" in v:
                assert v["source"].strip(), f"release {r['version']} variant {v['cuda']} has an empty source"


def _parses(value: str) -> bool:
    if value == "unknown":
        return True
    try:
        Version(value)
    except InvalidVersion:
        return False
    return True


def test_versions_parse(cuda, cudnn):
    """All version-like fields parse with packaging.version.Version, or are the literal "unknown"."""
    bad = []
    for t in cuda["toolkit"]:
        for k in ("version", "linux_min_driver", "windows_min_driver"):
            if not _parses(t[k]):
                bad.append(f"toolkit {t['version']}.{k}={t[k]!r}")
        assert t["version"] != "unknown"
    for m in cuda["minor_version_compatibility"]:
        for k in ("linux_min_driver", "windows_min_driver", "driver_branch_max_exclusive"):
            if k in m and m[k] != "none" and not _parses(m[k]):
                bad.append(f"mvc {m['major']}.{k}={m[k]!r}")
    for r in cudnn["release"]:
        assert r["version"] != "unknown"
        for k in ("version", "build"):
            if not _parses(r[k]):
                bad.append(f"release {r['version']}.{k}={r[k]!r}")
        date = r["release_date"]
        assert date == "unknown" or (len(date) == 7 and date[4] == "-"), f"release {r['version']} date {date!r}"
        for v in r.get("variant", []):
            for k in ("cuda", "min_compute_capability", "max_compute_capability", "linux_min_driver"):
                if not _parses(v[k]):
                    bad.append(f"release {r['version']} variant {v['cuda']}.{k}={v[k]!r}")
    assert not bad, bad


def test_no_duplicate_rows(cuda, cudnn):
    tv = [t["version"] for t in cuda["toolkit"]]
    rv = [r["version"] for r in cudnn["release"]]
    assert len(tv) == len(set(tv))
    assert len(rv) == len(set(rv))
    for r in cudnn["release"]:
        cv = [v["cuda"] for v in r.get("variant", [])]
        assert len(cv) == len(set(cv)), r["version"]


def test_unknown_values_are_explained(cuda, cudnn):
    """A row that leaves a value unknown says why in a note (on the row or the variant)."""
    for t in cuda["toolkit"]:
        if t["linux_min_driver"] == "unknown":
            assert t.get("note"), t["version"]
    for r in cudnn["release"]:
        for v in r.get("variant", []):
            if "unknown" in (v["min_compute_capability"], v["linux_min_driver"]):
                assert v.get("note") or r.get("note"), (r["version"], v["cuda"])


def test_coverage(cuda, cudnn):
    tv = {t["version"] for t in cuda["toolkit"]}
    assert {"8.0.44", "8.0.61", "11.8.0", "12.9.1", "13.0.0"} <= tv
    rv = {r["version"] for r in cudnn["release"]}
    assert {"5.0", "5.1", "6.0", "7.6.5", "8.0.0", "8.9.7", "9.0.0", "9.10.2", "9.27.0"} <= rv
    assert {g["major"] for g in cudnn["generation"]} == {5, 6, 7, 8, 9}


# ---------------------------------------------------------------- CUDA facts


def test_cuda_12_4_0_driver(cuda):
    """CUDA 12.4 GA needs Linux >= 550.54.14 and Windows >= 551.61.
    Source: NVIDIA CUDA Toolkit Release Notes (13.2 Update 2), Table 3."""
    t = toolkit(cuda, "12.4.0")
    assert t["linux_min_driver"] == "550.54.14"
    assert t["windows_min_driver"] == "551.61"


def test_cuda_12_4_1_driver(cuda):
    """CUDA 12.4 Update 1 needs Linux >= 550.54.15, Windows >= 551.78.
    Source: NVIDIA CUDA Toolkit Release Notes (13.2 Update 2), Table 3."""
    t = toolkit(cuda, "12.4.1")
    assert (t["linux_min_driver"], t["windows_min_driver"]) == ("550.54.15", "551.78")


def test_cuda_12_8_0_driver(cuda):
    """CUDA 12.8 GA needs Linux >= 570.26 (Windows >= 570.65).
    Source: NVIDIA CUDA Toolkit Release Notes (13.2 Update 2), Table 3."""
    t = toolkit(cuda, "12.8.0")
    assert (t["linux_min_driver"], t["windows_min_driver"]) == ("570.26", "570.65")


def test_cuda_13_0_0_driver_and_no_windows_value(cuda):
    """CUDA 13.0 GA needs Linux >= 580.65.06; the Windows column is N/A.
    Source: NVIDIA CUDA Toolkit Release Notes (13.2 Update 2), Table 3."""
    t = toolkit(cuda, "13.0.0")
    assert t["linux_min_driver"] == "580.65.06"
    assert t["windows_min_driver"] == "unknown"


def test_cuda_11_8_0_driver(cuda):
    """CUDA 11.8 GA needs Linux >= 520.61.05 and Windows >= 520.06.
    Source: NVIDIA CUDA Toolkit Release Notes (13.2 Update 2), Table 3."""
    t = toolkit(cuda, "11.8.0")
    assert (t["linux_min_driver"], t["windows_min_driver"]) == ("520.61.05", "520.06")


def test_cuda_8_0_ga1_and_ga2(cuda):
    """CUDA 8.0.44 (GA1) needs >= 367.48; 8.0.61 (GA2) needs >= 375.26 (Windows 369.30 / 376.51).
    Source: NVIDIA CUDA Toolkit Release Notes (13.2 Update 2), Table 3."""
    assert toolkit(cuda, "8.0.44")["linux_min_driver"] == "367.48"
    assert toolkit(cuda, "8.0.44")["windows_min_driver"] == "369.30"
    assert toolkit(cuda, "8.0.61")["linux_min_driver"] == "375.26"
    assert toolkit(cuda, "8.0.61")["windows_min_driver"] == "376.51"


def test_cuda_10_2_driver(cuda):
    """CUDA 10.2.89 needs Linux >= 440.33, Windows >= 441.22.
    Source: NVIDIA CUDA Toolkit Release Notes Table 3, and CUDA Compatibility guide Table 2 (10.x minimums)."""
    t = toolkit(cuda, "10.2.89")
    assert (t["linux_min_driver"], t["windows_min_driver"]) == ("440.33", "441.22")


def test_cuda_12_3_2_not_in_nvidia_table(cuda):
    """CUDA 12.3 Update 2 has no row in NVIDIA's Table 3, so its minimum is left unknown (spack shows it bundles 545.23.08).
    Source: NVIDIA CUDA Toolkit Release Notes (13.2 Update 2), Table 3; spack-packages cuda/package.py."""
    assert toolkit(cuda, "12.3.2")["linux_min_driver"] == "unknown"


def test_toolkit_minimums_never_decrease(cuda):
    """Within NVIDIA's Table 3, a newer toolkit never needs an older Linux driver."""
    known = [(Version(t["version"]), Version(t["linux_min_driver"])) for t in cuda["toolkit"] if t["linux_min_driver"] != "unknown"]
    known.sort()
    for (v1, d1), (v2, d2) in zip(known, known[1:], strict=False):
        assert d2 >= d1, f"{v2} needs {d2} < {v1}'s {d1}"


def test_minor_version_compatibility(cuda):
    """MVC: CUDA 11.x >= 450 (450.80.02 / 452.39) and < 525; 12.x >= 525 (525.60.13) and < 580; 13.x >= 580.
    Source: NVIDIA CUDA Compatibility guide, Minor Version Compatibility; CUDA Release Notes Table 2."""
    mvc = {m["major"]: m for m in cuda["minor_version_compatibility"]}
    assert set(mvc) == {11, 12, 13}
    assert (mvc[11]["linux_min_driver"], mvc[11]["windows_min_driver"]) == ("450.80.02", "452.39")
    assert mvc[11]["driver_branch_max_exclusive"] == "525"
    assert mvc[12]["linux_min_driver"] == "525.60.13"
    assert mvc[12]["driver_branch_max_exclusive"] == "580"
    assert mvc[13]["linux_min_driver"] == "580.65.06"
    assert "cudaErrorCallRequiresNewerDriver" in mvc[12]["note"]
    assert "PTX" in mvc[12]["note"]


def test_forward_compatibility_is_data_centre_only(cuda):
    """Forward compatibility (cuda-compat package) only for Data Center GPUs, select NGC Server Ready RTX, Jetson.
    Source: NVIDIA CUDA Compatibility guide, Forward Compatibility."""
    fc = cuda["forward_compatibility"]
    assert "Data Center" in fc["supported_gpus"]
    assert "cuda-compat" in fc["note"]
    assert fc["introduced_in"] == "10.0"


# ---------------------------------------------------------------- cuDNN facts


def test_generation_9_libraries(cudnn):
    """cuDNN 9: libcudnn.so.9 shim plus 7 sub-libraries; version = major*10000 + minor*100 + patch.
    Source: cudnn-facts.md (nvidia-cudnn-cu13 9.19.0.56 wheel, cudnnGetVersion 91900)."""
    g = {x["major"]: x for x in cudnn["generation"]}
    assert g[9]["linux_library"] == "libcudnn.so.9"
    assert g[9]["version_encoding"] == "major*10000 + minor*100 + patch"
    assert "libcudnn_engines_runtime_compiled" in g[9]["sublibraries"] and len(g[9]["sublibraries"]) == 7
    assert g[8]["version_encoding"] == "major*1000 + minor*100 + patch"
    assert g[8]["version_header"] == "cudnn_version.h"
    assert g[7]["version_header"] == "cudnn.h"
    assert g[7]["sublibraries"] == []


def test_cudnn_8_9_7_variants(cudnn):
    """cuDNN 8.9.7 (8.9.7.29) has a cuda 11 and a cuda 12 variant.
    Source: spack-packages cudnn/package.py keys 8.9.7.29-11 and 8.9.7.29-12."""
    r = release(cudnn, "8.9.7")
    assert r["build"] == "8.9.7.29"
    assert set(variants(r)) == {"11", "12"}


def test_cudnn_9_1_0_build_and_date(cudnn):
    """cuDNN 9.1.0 is build 9.1.0.70, released 2024-04, with cuda11 and cuda12 archives.
    Source: NVIDIA redistrib_9.1.0.json (mirrored in NixOS/nixpkgs)."""
    r = release(cudnn, "9.1.0")
    assert (r["build"], r["release_date"]) == ("9.1.0.70", "2024-04")
    assert set(variants(r)) == {"11", "12"}


def test_cudnn_9_0_0_matrix(cudnn):
    """cuDNN 9.0.0 for CUDA 12.x: CUDA 12.0-12.3, driver >= 525.60.13, CC 5.0-9.0 (no Kepler).
    Source: NVIDIA cuDNN 9.0.0 Support Matrix; redistrib_9.0.0.json (9.0.0.312)."""
    r = release(cudnn, "9.0.0")
    assert r["build"] == "9.0.0.312"
    v = variants(r)["12"]
    assert (v["cuda_toolkits"], v["min_compute_capability"], v["max_compute_capability"], v["linux_min_driver"]) == (
        "12.0-12.3", "5.0", "9.0", "525.60.13")
    assert variants(r)["11"]["linux_min_driver"] == "450.80.02"


def test_cudnn_9_10_2_last_cuda11_and_blackwell(cudnn):
    """cuDNN 9.10.2 still has a cuda11 variant; its CUDA 12 build goes up to CC 12.0 (Blackwell) and down to 5.0.
    Source: NVIDIA cuDNN Support Matrix (9.10.2); spack-packages 9.10.2.21-11/-12."""
    r = release(cudnn, "9.10.2")
    v = variants(r)
    assert set(v) == {"11", "12"}
    assert (v["12"]["min_compute_capability"], v["12"]["max_compute_capability"]) == ("5.0", "12.0")


def test_cudnn_9_11_drops_cuda11_and_pre_turing(cudnn):
    """cuDNN 9.11.0 has no CUDA 11 build and its CUDA 12 build needs CC >= 7.5 (Maxwell/Pascal/Volta dropped).
    Source: spack-packages (only 9.11.0.98-12); immich-app/immich#23110 and pytorch/pytorch#165773 citing NVIDIA's 9.11.0 matrix."""
    r = release(cudnn, "9.11.0")
    assert set(variants(r)) == {"12"}
    assert variants(r)["12"]["min_compute_capability"] == "7.5"


def test_cudnn_9_12_first_cuda13(cudnn):
    """cuDNN 9.12.0 (9.12.0.46, 2025-08) ships cuda12 and cuda13 archives and no cuda11.
    Source: NVIDIA redistrib_9.12.0.json (mirrored in NixOS/nixpkgs)."""
    r = release(cudnn, "9.12.0")
    assert (r["build"], r["release_date"]) == ("9.12.0.46", "2025-08")
    assert set(variants(r)) == {"12", "13"}
    assert not any("13" in variants(x) for x in cudnn["release"] if Version(x["version"]) < Version("9.12.0"))


def test_cudnn_9_17_0_cuda13_turing_minimum(cudnn):
    """cuDNN 9.17.0 for CUDA 13.x: CUDA 13.0-13.1, driver >= 580.65.06, CC 7.5-12.0 (no Maxwell/Pascal/Volta).
    Source: NVIDIA cuDNN Support Matrix (9.17.0)."""
    v = variants(release(cudnn, "9.17.0"))
    assert (v["13"]["cuda_toolkits"], v["13"]["min_compute_capability"], v["13"]["max_compute_capability"]) == (
        "13.0-13.1", "7.5", "12.0")
    assert v["13"]["linux_min_driver"] == "580.65.06"
    assert v["12"]["min_compute_capability"] == "7.5"


def test_cudnn_9_27_0_newest(cudnn):
    """cuDNN 9.27.0 is build 9.27.0.42 (2026-09) with cuda12 and cuda13 variants.
    Source: NVIDIA redistrib_9.27.0.json (mirrored in NixOS/nixpkgs)."""
    r = release(cudnn, "9.27.0")
    assert (r["build"], r["release_date"]) == ("9.27.0.42", "2026-09")
    assert set(variants(r)) == {"12", "13"}


def test_cudnn_8_5_0_has_cuda10_variant(cudnn):
    """cuDNN 8.5.0 (8.5.0.96) ships cuda10 and cuda11 archives; its CUDA 11 build covers 11.0-11.7, SM 3.5+.
    Source: NVIDIA redistrib_8.5.0.json; cuDNN 8.5.0 Support Matrix."""
    r = release(cudnn, "8.5.0")
    v = variants(r)
    assert set(v) == {"10", "11"}
    assert (v["11"]["cuda_toolkits"], v["11"]["min_compute_capability"]) == ("11.0-11.7", "3.5")


def test_cudnn_7_6_5_variants(cudnn):
    """cuDNN 7.6.5 (7.6.5.32) was built for CUDA 9.0, 9.2, 10.0, 10.1 and 10.2.
    Source: spack-packages cudnn/package.py (7.6.5.32-9.0 ... -10.2); cuDNN 8.0.3-era support matrix (7.6.4-7.6.5)."""
    r = release(cudnn, "7.6.5")
    assert r["build"] == "7.6.5.32"
    assert set(variants(r)) == {"9.0", "9.2", "10.0", "10.1", "10.2"}


def test_cudnn_7_5_1_matrix(cudnn):
    """cuDNN 7.5.1 with CUDA 10.1.105 needs r418.39 and supports Kepler (3.x) through Turing (7.5).
    Source: NVIDIA cuDNN Support Matrix archived with cuDNN 7.6.0."""
    v = variants(release(cudnn, "7.5.1"))["10.1"]
    assert (v["linux_min_driver"], v["min_compute_capability"], v["max_compute_capability"]) == ("418.39", "3.0", "7.5")


def test_cudnn_8_2_0_per_toolkit_variants(cudnn):
    """cuDNN 8.2.0 (8.2.0.53) was built per toolkit: 11.3 (for 11.0-11.3, SM 3.5+) and 10.2 (SM 3.0+).
    Source: spack-packages cudnn/package.py; NVIDIA cuDNN Support Matrix archived with 8.2.2 (table for 8.2.0 and 8.2.1)."""
    v = variants(release(cudnn, "8.2.0"))
    assert set(v) == {"11.3", "10.2"}
    assert (v["11.3"]["cuda_toolkits"], v["11.3"]["min_compute_capability"]) == ("11.0-11.3", "3.5")
    assert v["10.2"]["min_compute_capability"] == "3.0"


def test_cudnn_versions_sorted_and_majors_match_generations(cudnn):
    vs = [Version(r["version"]) for r in cudnn["release"]]
    assert vs == sorted(vs)
    majors = {g["major"] for g in cudnn["generation"]}
    assert {v.major for v in vs} <= majors
    for r in cudnn["release"]:
        if r["build"] != "unknown":
            assert r["build"].startswith(r["version"] + "."), (r["version"], r["build"])
