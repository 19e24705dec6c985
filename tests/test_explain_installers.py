"""Issue 41, round seventeen (builder e26): the installers' and toolkits' own messages, read by their shape with the
values they carry, each beside an unrelated message of the same tool that stays unclaimed.

Each shape is written as the tool's own source prints it (torch/utils/cpp_extension.py, CMake's
Modules/CMakeDetermineCUDACompiler.cmake, nvcc's documented diagnostics, uv's pubgrub report and distribution types,
conda's exceptions.py: the commits are in compat/errors.toml's rows); the development cases are
benchmarks/explain_eval/cases_r17_e26.toml."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text


def answers(message: str) -> list[dict[str, object]]:
    return list(explain_text(message, None)["matches"])


def first(message: str) -> dict[str, object]:
    found = answers(message)
    assert found, message
    return found[0]


def declined(message: str) -> None:
    data = explain_text(message, None)
    assert data["exit_code"] == 1 and data["matches"] == [], (message, data["matches"])


# ------------------------------------------------------------------ torch.utils.cpp_extension: the host compiler's bounds

@pytest.mark.parametrize(("message", "compiler", "version", "cuda"), [
    # the format of _check_cuda_version (torch 2.x), above the bound
    ("RuntimeError: The current installed version of g++ (13.2.0) is greater than the maximum required version by "
     "CUDA 12.1. Please make sure to use an adequate version of g++ (>=6.0.0, <13.0).", "g++", "13.2.0", "12.1"),
    # below the bound
    ("RuntimeError: The current installed version of g++ (5.4.0) is less than the minimum required version by CUDA "
     "12.4 (6.0.0). Please make sure to use an adequate version of g++ (>=6.0.0, <14.0).", "g++", "5.4.0", "12.4"),
    # torch 1.x's wording, a conda compiler named by its path
    ("RuntimeError: The current installed version of /opt/conda/bin/x86_64-conda-linux-gnu-c++ (14.3.0) is greater "
     "than the maximum required version by CUDA 12.8 (14.0). Please make sure to use an adequate version of "
     "/opt/conda/bin/x86_64-conda-linux-gnu-c++ (>=6.0.0, <14.0).", "/opt/conda/bin/x86_64-conda-linux-gnu-c++",
     "14.3.0", "12.8"),
])
def test_cpp_extension_host_compiler_bounds_are_the_host_compiler(message: str, compiler: str, version: str,
                                                                  cuda: str) -> None:
    answer = first(message)
    # was CD410 (a version pair read as a framework built against another version: the wrong family)
    assert answer["code"] == "CD209", answer
    text = f"{answer['cause']} {answer['fix']}"
    assert compiler in text and version in text and f"CUDA {cuda}" in text
    # the same builder's CUDA mismatch stays what the development sets call it (CD4: the framework's build)
    assert first("RuntimeError:\nThe detected CUDA version (12.1) mismatches the version that was used to compile\n"
                 "PyTorch (11.8). Please make sure to use the same CUDA versions.")["code"] == "CD410"


def test_cpp_extension_empty_arch_list_without_a_gpu_names_torch_cuda_arch_list() -> None:
    message = ('  File "/opt/conda/lib/python3.10/site-packages/torch/utils/cpp_extension.py", line 1694, in '
               "_get_cuda_arch_flags\n    arch_list[-1] += '+PTX'\nIndexError: list index out of range")
    answer = first(message)
    assert answer["code"] == "CD208" and answer["id"] == "cpp-extension-no-gpu-visible-arch-list", answer
    assert "TORCH_CUDA_ARCH_LIST" in str(answer["fix"])
    # an IndexError of anybody's code, even in a build, is not this
    declined('  File "setup.py", line 12, in get_version\n    return parts[-1]\nIndexError: list index out of range')
    # nor a Python 2 interpreter reading a CUDA package's setup.py (EleutherAI/gpt-neox#560's words)
    declined('File "deepspeed\\setup.py", line 43\ncupy = f"cupy-cuda{torch.version.cuda.replace(\'.\',\'\')[:3]}"\n'
             "                                                                  ^\n    SyntaxError: invalid syntax")


# ------------------------------------------------------------------------------------------------- CMake's CUDA language

def test_cmake_default_architecture_undetected_is_the_cuda_compiler_cmake_found() -> None:
    message = ("-- The CUDA compiler identification is unknown\n"
               "CMake Error at /usr/share/cmake-3.29/Modules/CMakeDetermineCUDACompiler.cmake:266 (message):\n"
               "  Failed to detect a default CUDA architecture.\n\n  Compiler output:\n\n"
               "Call Stack (most recent call first):\n  CMakeLists.txt:10 (project)")
    answer = first(message)
    assert answer["code"] == "CD208" and "CMAKE_CUDA_COMPILER" in str(answer["fix"]), answer
    # CMake not finding a library outside the GPU stack is not claimed
    declined("CMake Error at /usr/share/cmake-3.22/Modules/FindPackageHandleStandardArgs.cmake:230 (message):\n"
             "  Could NOT find Boost (missing: Boost_INCLUDE_DIR filesystem system)\n"
             "Call Stack (most recent call first):\n  CMakeLists.txt:76 (find_package)")


@pytest.mark.parametrize("word", ["non-empty", "valid"])
def test_cmake_cuda_architectures_refused(word: str) -> None:
    message = (f"CMake Error at /usr/share/cmake-3.25/Modules/CMakeDetermineCUDACompiler.cmake:277 (message):\n"
               f"  CMAKE_CUDA_ARCHITECTURES must be {word} if set.\nCall Stack (most recent call first):\n"
               f"  CMakeLists.txt:150 (enable_language)")
    answer = first(message)
    assert answer["code"] == "CD208" and "-DCMAKE_CUDA_ARCHITECTURES" in str(answer["fix"]), answer


def test_a_host_compiler_nvcc_refused_goes_before_cmakes_summary_of_it() -> None:
    # cases_4 cd2-cmake-cuda-architectures-gcc12-tcnn: the GNU version error under CMake's summary is the cause
    message = ("CMake Error at /usr/share/cmake/Modules/CMakeDetermineCUDACompiler.cmake:311 (message):\n"
               "  CMAKE_CUDA_ARCHITECTURES must be valid if set.\nCall Stack (most recent call first):\n"
               "  CMakeLists.txt:25 (PROJECT)\n"
               "error: #error -- unsupported GNU version! gcc versions later than 11 are not supported! The nvcc flag "
               "'-allow-unsupported-compiler' can be used to override this version check; however, using an "
               "unsupported host compiler may cause compilation failure or incorrect run time execution. Use at your "
               "own risk.")
    found = answers(message)
    assert [m["code"] for m in found][:2] == ["CD209", "CD208"], found


# -------------------------------------------------------------------------------------------- nvcc and its host compiler

@pytest.mark.parametrize("message", [
    "gcc: No such file or directory\nnvcc fatal   : Failed to preprocess host compiler properties.",
    "nvcc fatal   : Failed to detect host compiler properties.",
])
def test_nvcc_without_a_runnable_host_compiler(message: str) -> None:
    answer = first(message)
    assert answer["id"] == "nvcc-host-compiler-properties" and answer["code"] == "CD208", answer
    # nvcc refusing the build's own malformed command line is the project's, not the toolkit's
    declined("nvcc fatal   : A single input file is required for a non-link phase when an outputfile is specified")


def test_nvcc_visual_studio_environment() -> None:
    message = ("nvcc fatal   : Could not set up the environment for Microsoft Visual Studio using 'C:/Program Files "
               "(x86)/Microsoft Visual Studio/2019/BuildTools/VC/Tools/MSVC/14.29.30133/bin/HostX86/x64/../../../../"
               "../../../VC/Auxiliary/Build/vcvars64.bat'")
    answer = first(message)
    assert answer["id"] == "nvcc-visual-studio-environment" and answer["code"] == "CD208", answer
    assert "x64 Native Tools Command Prompt" in str(answer["fix"])


@pytest.mark.parametrize(("version", "compiler"), [("90000", "Apple clang"), ("30500", "clang"), ("10.0", "Apple clang")])
def test_nvcc_refusing_the_host_compilers_release(version: str, compiler: str) -> None:
    answer = first(f"nvcc fatal   : The version ('{version}') of the host compiler ('{compiler}') is not supported")
    # was CD206 (a compiler older than the GPU): it is the host compiler's release
    assert answer["code"] == "CD209", answer
    assert f"{compiler} {version}" in str(answer["cause"])


# ------------------------------------------------------------------------------------------------------------------ uv

HINT = ("hint: `{package}` was found on {index}, but not at the requested version ({requirement}). A compatible version "
        "may be available on a subsequent index (e.g., https://pypi.org/simple). By default, uv will only consider "
        "versions that are published on the first index that contains a given package, to avoid dependency confusion "
        "attacks. If all indexes are equally trusted, use `--index-strategy unsafe-best-match` to consider all versions "
        "from all indexes, regardless of the order in which they were defined.")


@pytest.mark.parametrize(("index", "requirement"), [
    ("https://download.pytorch.org/whl/cu121", "torch==2.6.0"),  # a CUDA index without the release
    ("https://pypi.org/simple", "torch==2.5.1+cu124"),  # a CUDA build asked of PyPI, searched first
])
def test_uv_first_index_hint_about_a_cuda_build(index: str, requirement: str) -> None:
    answer = first(HINT.format(package="torch", index=index, requirement=requirement))
    assert answer["id"] == "uv-first-index-without-gpu-build" and answer["code"] == "CD520", answer
    assert index in str(answer["cause"]) and requirement in str(answer["cause"])
    # the same hint about a package that is not the GPU stack's, or about torch's CPU index, is not claimed
    declined(HINT.format(package="requests", index="https://pypi.org/simple", requirement="requests>=2.33.0"))
    declined(HINT.format(package="torch", index="https://download.pytorch.org/whl/cpu", requirement="torch==2.9.0"))
    # nor the installers' network errors, on PyPI and on PyTorch's CUDA index
    declined("ERROR: Could not install packages due to an OSError: HTTPSConnectionPool(host='files.pythonhosted.org', "
             "port=443): Read timed out.")
    declined("> ConnectionError\n> HTTPSConnectionPool(host='download.pytorch.org', port=443): Read timed out.")


@pytest.mark.parametrize("tag", ["ABI", "implementation"])
def test_uv_cuda_build_without_a_wheel_for_this_python(tag: str) -> None:
    message = ("  × No solution found when resolving dependencies:\n  ╰─▶ Because torch==2.5.1+cu124 has no wheels "
               f"with a matching Python {tag} tag (e.g., `cp313`) and you require torch==2.5.1+cu124, we can conclude "
               "that your requirements are unsatisfiable.")
    answer = first(message)
    # was CD521 (a conflict): nothing conflicts, the CUDA build has no wheel for this Python
    assert answer["id"] == "uv-gpu-build-no-wheel-for-this-python" and answer["code"] == "CD520", answer
    assert "cp313" in str(answer["cause"]) and "2.5.1+cu124" in str(answer["cause"])
    # torch with no wheel for a Python and no CUDA named is a Python pin (round twelve's decision): not claimed
    declined("  ╰─▶ Because torch==2.2.2 has no wheels with a matching Python ABI tag (e.g., `cp313`) and you require "
             "torch==2.2.2, we can conclude that your requirements are unsatisfiable.")


# ---------------------------------------------------------------------------------------------------------------- conda

def test_conda_clobber_between_two_cuda_packagings() -> None:
    message = ("ClobberError: This transaction has incompatible packages due to a shared path.\n"
               "  packages: nvidia/linux-64::libcusparse-11.7.5.86-0, nvidia/linux-64::cudatoolkit-11.3.1-ha36c431_9\n"
               "  path: 'lib/libcusparse.so.11'")
    answer = first(message)
    assert answer["id"] == "conda-clobber-two-cuda-packagings" and answer["code"] == "CD521", answer
    assert "lib/libcusparse.so.11" in str(answer["cause"])
    # two OpenMP runtimes sharing a file, and NVIDIA's label packages sharing a metadata file, are not the GPU stack's
    declined("ClobberError: This transaction has incompatible packages due to a shared path.\n"
             "  packages: defaults/linux-64::intel-openmp-2023.1.0-hdb19cb5_46306, "
             "defaults/linux-64::llvm-openmp-14.0.6-h9e868ea_0\n  path: 'lib/libomptarget.so'")
    declined("ClobberError: This transaction has incompatible packages due to a shared path.\n"
             "  packages: nvidia/label/cuda-11.7.0/win-64::cuda-cupti-11.7.50-0, "
             "nvidia/label/cuda-11.7.0/win-64::cuda-nvcc-11.7.64-0\n  path: 'metadata_conda_debug.yaml'")


# ------------------------------------------------------------------------- a CUDA extension's setup.py without nvcc

def test_a_setup_that_found_no_nvcc_and_failed_on_its_release() -> None:
    message = ('      File "/tmp/pip-install-x/causal-conv1d_1/setup.py", line 185, in <module>\n'
               '        if bare_metal_version >= Version("11.8"):\n'
               "    NameError: name 'bare_metal_version' is not defined")
    answer = first(message)
    assert answer["id"] == "cuda-extension-setup-without-nvcc-bare-metal-version" and answer["code"] == "CD201"
    assert "CUDA_HOME" in str(answer["fix"])
    # a setup.py's NameError about another name is its own bug
    declined('  File "setup.py", line 30, in <module>\n    long_description=readme,\nNameError: name \'readme\' is not '
             "defined")


# ------------------------------------------------------------------------------------ CMake 3.27 without FindCUDA

def test_find_package_cuda_without_the_removed_module() -> None:
    message = ("CMake Error at CMakeLists.txt:12 (find_package):\n"
               '  By not providing "FindCUDA.cmake" in CMAKE_MODULE_PATH this project has\n'
               '  asked CMake to find a package configuration file provided by "CUDA", but\n'
               "  CMake did not find one.")
    answer = first(message)
    assert answer["id"] == "cmake-findcuda-module-removed" and answer["code"] == "CD208", answer
    assert "CMP0146" in str(answer["fix"])
    # the same find_package words for a library outside the GPU stack are not claimed
    declined("CMake Error at CMakeLists.txt:20 (find_package):\n"
             '  By not providing "FindEigen3.cmake" in CMAKE_MODULE_PATH this project has\n'
             '  asked CMake to find a package configuration file provided by "Eigen3", but\n'
             "  CMake did not find one.")


# ------------------------------------------------------------------------- pip: an sdist whose metadata has a CUDA tag

def test_an_sdist_whose_built_version_carries_a_cuda_tag() -> None:
    message = ("Requested flashpkg==1.2.0 from https://files.pythonhosted.org/packages/x/flashpkg-1.2.0.tar.gz has "
               "inconsistent version: expected '1.2.0', but metadata has '1.2.0+cu121torch2.3'")
    answer = first(message)
    assert answer["id"] == "pip-sdist-metadata-cuda-local-version" and answer["code"] == "CD520", answer
    assert "1.2.0+cu121torch2.3" in str(answer["cause"]) and "flashpkg" in str(answer["cause"])
    # any other inconsistency of a package's metadata is its own
    declined("Requested mypkg==1.0 from https://files.pythonhosted.org/packages/x/mypkg-1.0.tar.gz has inconsistent "
             "version: expected '1.0', but metadata has '1.0.dev0'")


# ---------------------------------------------------------------- an architecture keyword older CMake passes as a word

@pytest.mark.parametrize("value", ["native", ""])
def test_native_architecture_handed_to_nvcc_as_a_word(value: str) -> None:
    answer = first(f"nvcc fatal   : Unsupported gpu architecture 'compute_{value}'")
    # was CD206 (a compiler older than the GPU): no GPU is named, a CMake keyword reached nvcc
    assert answer["id"] == "cmake-native-architecture-before-cmake-324" and answer["code"] == "CD208", answer
    assert "CMAKE_CUDA_ARCHITECTURES=86" in str(answer["fix"])
    # a real architecture the toolkit does not know stays the compiler's (CD206)
    assert first("nvcc fatal   : Unsupported gpu architecture 'compute_120'")["code"] == "CD206"
