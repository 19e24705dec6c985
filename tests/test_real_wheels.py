"""`check` on real NVIDIA cuDNN libraries from PyPI: they load without a GPU and answer cudnnGetVersion."""

from __future__ import annotations

import pytest

from tests.conftest import Machine, codes
from tests.fakes.build import fake_cudnn
from tests.real_wheels import real_cudnn

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(("version", "cuda", "sublibraries"), [
    ("9.19.0", "13.1", {"libcudnn_graph", "libcudnn_ops", "libcudnn_cnn", "libcudnn_adv", "libcudnn_heuristic",
                        "libcudnn_engines_precompiled", "libcudnn_engines_runtime_compiled"}),
    ("8.9.7", "12.2", {"libcudnn_ops_infer", "libcudnn_ops_train", "libcudnn_cnn_infer", "libcudnn_cnn_train",
                       "libcudnn_adv_infer", "libcudnn_adv_train"}),
])
def test_real_cudnn_wheel(machine: Machine, version: str, cuda: str, sublibraries: set[str]) -> None:
    folder = real_cudnn(version)
    report = machine.check_json("--search-path", str(folder))
    [install] = report["cudnn"]
    assert install["library"] == str(folder / "lib" / f"libcudnn.so.{version[0]}")
    assert install["version"] == version  # from cudnnGetVersion, in a child process
    assert install["cuda_version"] == cuda  # from cudnnGetCudartVersion
    assert install["header_version"] == version  # from include/cudnn_version.h
    assert install["sublibraries"] == {name: True for name in sublibraries}
    assert install["load_error"] is None and install["arch"] == "x86_64"
    assert not codes(report) & {"CD303", "CD304", "CD305", "CD307", "CD308", "CD309", "CD314"}


def test_two_libraries_with_one_soname_are_told_apart(machine: Machine, tmp_path) -> None:
    """A real libcudnn.so.9 and another libcudnn.so.9: one process could not tell them apart."""
    real = real_cudnn("9.19.0")
    fake_cudnn(tmp_path / "other" / "lib", version=90100, cudart=12040)
    report = machine.check_json("--search-path", str(real), "--search-path", str(tmp_path / "other"))
    assert sorted(i["version"] for i in report["cudnn"]) == ["9.1.0", "9.19.0"]


def test_real_library_on_the_loader_path(machine: Machine) -> None:
    folder = real_cudnn("9.19.0")
    machine.add_library_path(folder / "lib")
    report = machine.check_json("--require", "cudnn>=9.19", "--require", "cudnn<9.20")
    [install] = report["cudnn"]
    assert install["loaded_by"] == ["ld.so"]
    assert install["source"] == "env"
    assert not codes(report) & {"CD320", "CD302", "CD310"}
