"""Issue 41, round thirteen (e19): the layer of the stack a message's cause is in, where the message names several
(cudnn_doctor/explain/routing.py). Each principle is shown on real messages of several stacks, with their threads.

- the innermost failure decides: cuDNN's "Could not load library A. Error: B: cannot open shared object file" is
  B's layer (the driver's libcuda.so, the toolkit's libnvrtc.so), not cuDNN's; where B is A itself, cuDNN's;
- a quote escaped by what carried the message ("option 'gpu-name\\'", GitHub's Markdown, a Python repr) is read as
  the quote, so ptxas' refusal of an architecture is the toolkit's (CD206), not the framework's build (CD404).
"""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text

INNERMOST = [
    # cuDNN 8 from pip under nougat on WSL 2: the driver's unversioned libcuda.so is what is missing
    ("facebookresearch/nougat#115", "CD101",
     "  0%|          | 0/1 [00:00<?, ?it/s]Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot "
     "open shared object file: No such file or directory\nAborted"),
    # the same under SadTalker, with cuDNN's own second line
    ("OpenTalker/SadTalker#323", "CD101",
     "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file: No such file "
     "or directory\nPlease make sure libcudnn_cnn_infer.so.8 is in your library path!"),
    # stable-diffusion-webui's torch: cuDNN 8 JIT-compiles with NVRTC, the toolkit's library
    ("AUTOMATIC1111/stable-diffusion-webui#10230", "CD203",
     "Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared object file: No such "
     "file or directory"),
]

OUTER_ITSELF = [
    # Whisper-WebUI (faster-whisper): the cuDNN sub-library itself is missing: cuDNN's layer
    ("jhj0517/Whisper-WebUI#294", "CD3",
     "Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared object "
     "file: No such file or directory\nPlease make sure libcudnn_ops_infer.so.8 is in your library path!"),
]

ESCAPED_QUOTES = [
    # GPUStack on a DGX Spark (GB10), the Markdown escaping the last quote
    ("gpustack/gpustack#4372", "CD206", "ptxas fatal : Value 'sm_121a' is not defined for option 'gpu-name\\'"),
    # the same words unescaped (kijai/ComfyUI-WanVideoWrapper#63, Triton's bundled ptxas on an RTX 50xx)
    ("kijai/ComfyUI-WanVideoWrapper#63", "CD206", "ptxas fatal : Value 'sm_120' is not defined for option 'gpu-name'"),
]


@pytest.mark.parametrize(("source", "code", "message"), INNERMOST, ids=[case[0] for case in INNERMOST])
def test_the_innermost_missing_library_names_the_layer(source: str, code: str, message: str) -> None:
    answer = explain_text(message, None)
    first = answer["matches"][0]
    assert first["code"] == code, (source, [m["code"] for m in answer["matches"]])
    assert first["id"].startswith("cudnn8-"), first["id"]  # the catalog's explanation, with the cause's code


@pytest.mark.parametrize(("source", "family", "message"), OUTER_ITSELF, ids=[case[0] for case in OUTER_ITSELF])
def test_a_library_missing_itself_stays_in_its_own_layer(source: str, family: str, message: str) -> None:
    answer = explain_text(message, None)
    assert answer["matches"][0]["code"].startswith(family), (source, answer["matches"][0])


@pytest.mark.parametrize(("source", "code", "message"), ESCAPED_QUOTES, ids=[case[0] for case in ESCAPED_QUOTES])
def test_an_escaped_quote_reads_as_the_quote(source: str, code: str, message: str) -> None:
    answer = explain_text(message, None)
    assert answer["matches"][0]["code"] == code, (source, [m["code"] for m in answer["matches"]])
    assert answer["facts"]["compute_capabilities"], answer["facts"]
