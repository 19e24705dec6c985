"""Issue 41, round twenty-one (builder e30): refusals read by their grammar, not by a thread's words.

1. A CUDA library's status read by its structure (compat/status_codes.toml [[library_spelling]]): the library named
   on the line (its name, one of its calls, or the status's own prefix), then the status's words however the tool
   separated them ("CUBLAS STATUS NOT SUPPORTED"), without their prefix ("STATUS_EXECUTION_FAILED" beside a cudnn*
   call), or its number after the library's "status" ("cudnn_status: 3"); judged by the enum's own row.
Each is tested both ways: the library's status is answered by its finding, the same shape without the library, or
with a word that is no status of it, stays unclaimed. Messages here are written apart from the development cases."""

from __future__ import annotations

from tests.test_explain_installers import declined, first


def test_cublas_status_with_spaces_for_underscores_is_the_status() -> None:
    answer = first("Transcription stopped: cuBLAS failed with status CUBLAS STATUS NOT SUPPORTED (int8_float16)")
    assert answer["code"] == "CD211", answer  # was unrecognised: the name's words were split by spaces
    assert "CUBLAS_STATUS_NOT_SUPPORTED" in str(answer)


def test_status_name_with_a_stray_separator_on_a_line_of_its_own() -> None:
    answer = first("worker error: cuBLAS failed with status\nCUBLAS_STATUS _NOT_SUPPORTED")
    assert answer["code"] == "CD211", answer


def test_cudnn_status_without_its_prefix_beside_a_cudnn_call() -> None:
    answer = first("lua/5.1/cudnn/RNN.lua:88: Error in CuDNN: STATUS_BAD_PARAM (cudnnSetRNNDescriptor_v6)")
    assert answer["code"] == "CD316", answer  # was unrecognised: the prefix CUDNN_ was not printed
    assert "CUDNN_STATUS_BAD_PARAM" in str(answer)


def test_cublas_status_suffix_beside_a_cublaslt_call() -> None:
    answer = first("RuntimeError: CUDA error: NOT_SUPPORTED when calling `cublasLtMatmul(ltHandle, computeDesc)`")
    assert answer["code"] == "CD211", answer


def test_cudnn_status_number_after_the_libraries_status_word() -> None:
    answer = first("[ERROR] conv_fprop: cudnnBackendFinalize failed, cudnn_status: 3")
    assert answer["code"] == "CD316", answer  # cuDNN 8's numbering: 3 is CUDNN_STATUS_BAD_PARAM
    assert "CUDNN_STATUS_BAD_PARAM" in str(answer)


def test_cublas_status_number_in_a_tools_words() -> None:
    answer = first("cuBLAS error 15 at ggml/src/ggml-cuda/ggml-cuda.cu:1402")
    assert answer["code"] == "CD211", answer  # was read as a status with no finding


def test_look_alikes_without_the_library_or_without_a_status_stay_unclaimed() -> None:
    declined("HTTP error: STATUS_NOT_FOUND while fetching the model card")  # no library named
    declined("cublas handle ok; layout CUBLAS COMPUTE 32F chosen for the GEMM")  # no status of cuBLAS
    declined("Error in CuDNN wrapper: NOT_IMPLEMENTED_YET (see docs)")  # no such cuDNN status
    declined("cudnn_status: 0 (all kernels ready)")  # 0 is success


def test_a_cudnn_function_a_program_could_not_look_up_is_cudnns_release() -> None:
    answer = first("E0312 conv_plan.cpp:88] Unable to find symbol cudnnBackendPopulateCudaGraph in the loaded cuDNN")
    assert answer["code"] == "CD321", answer  # was unrecognised: no loader's "undefined symbol" words
    assert "cudnnBackendPopulateCudaGraph" in str(answer)


def test_a_cublas_function_a_loader_could_not_load_is_cublas() -> None:
    answer = first("Invalid handle. Cannot load symbol cublasLtMatmulPreferenceCreate\nAborted (core dumped)")
    assert answer["code"] == "CD203", answer


def test_a_driver_function_a_binding_could_not_load_needs_a_newer_driver() -> None:
    answer = first('ERROR: could not load symbol "cuCtxCreate_v4": /usr/bin/julia: undefined')
    assert answer["code"] == "CD103", answer


def test_lookup_words_for_a_symbol_of_no_gpu_library_stay_unclaimed() -> None:
    declined("DVB: Unable to find symbol xc2028_attach()")
    declined("pulse: could not load symbol pa_context_new_with_proplist")
    declined("Warning: could not load symbols from /usr/lib/libfoo.so")
    declined("failed to load symbol curl_easy_init from libcurl.so.4")  # cu followed by a lower-case letter


def test_a_mangled_pytorch_symbol_pasted_into_markdown_is_still_pytorchs() -> None:
    answer = first("ImportError: /opt/venv/lib/python3.11/site-packages/selective_scan_cuda.cpython-311-x86_64-linux-gnu.so: "
                   "undefined symbol: *ZN2at4_ops5empty4callEN3c108ArrayRefINS2_6SymIntEEE*")
    assert answer["code"] == "CD410", answer  # was unrecognised: "*ZN2at..." is "_ZN2at..." (ATen) with its _ taken
    declined("ImportError: /usr/lib/libfoo.so: undefined symbol: *Zfoo_bar*")  # no namespace of a framework


def test_pytorchs_stable_c_abi_symbol_is_pytorchs() -> None:
    answer = first("OSError: /opt/venv/lib/python3.12/site-packages/torchvision/_C.so: undefined symbol: "
                   "aoti_torch_create_tensor_from_blob_v2")
    assert answer["code"] == "CD410", answer  # was unrecognised: aoti_torch_* had no owner
    declined("/x/lltm_cpp.so: undefined symbol: aoti_other_helper")  # not the aoti_torch_ namespace


def test_a_plugins_check_of_a_cuda_extension_release() -> None:
    answer = first("[ComfyUI-FluxKit] FluxKit 1.4.0 is not compatible with flash-attn 2.5.8. Please install 2.7.x")
    assert answer["code"] == "CD410", answer  # was unrecognised: a plugin's own words
    assert "flash-attn" in str(answer)
    declined("pandas-helpers 0.3 is not compatible with numpy 2.0.1. Please install numpy<2")


def test_an_installer_helpers_framework_too_new() -> None:
    answer = first("RuntimeError: Torch = 2.9.1+cu130 too new!")
    assert answer["code"] == "CD410", answer
    declined("RuntimeError: Sphinx = 8.1.0 too new!")


def test_a_version_assertion_of_a_gpu_stack_package() -> None:
    answer = first("AssertionError: xformers==0.0.29.post1 is used but incompatible. Please install xformers>=0.0.23, <0.0.28.")
    assert answer["code"] == "CD410", answer
    declined("AssertionError: MMEngine==0.7.0 is used but incompatible. Please install mmengine>=0.8.0, <1.0.0.")
