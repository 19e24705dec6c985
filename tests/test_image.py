"""`cudnn-doctor image` on real images built offline (tests/images.py): an OCI layout, a `docker save` archive and a
push to Debian's docker-registry on 127.0.0.1, judged against a node with a fake NVML; and hostile images."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.fakes.build import fake_nvml
from tests.images import config_of, digest, docker_archive, layer, oci_layout, push, registry
from tests.test_schemas import validate

SITE = "usr/local/lib/python3.12/dist-packages"
ENV = {"PATH": "/usr/local/cuda/bin:/usr/bin", "CUDA_VERSION": "12.8.1", "NV_CUDNN_VERSION": "9.8.0.87",
       "NVIDIA_REQUIRE_CUDA": "cuda>=12.8 brand=tesla,driver>=470,driver<471 brand=unknown,driver>=470,driver<471",
       "NVIDIA_VISIBLE_DEVICES": "all"}


def cuda_image_layers() -> list[tuple[bytes, str]]:
    """NVIDIA's CUDA 12.8 cuDNN runtime image in miniature, with torch; TensorFlow added, then removed by a whiteout."""
    base = layer({
        "usr/local/cuda-12.8/version.json": json.dumps({"cuda": {"name": "CUDA SDK", "version": "12.8.1"}}),
        "usr/local/cuda-12.8/targets/x86_64-linux/lib/libcudart.so.12.8.90": b"\x7fELF",
        "usr/local/cuda-12.8/targets/x86_64-linux/lib/libcudart.so.12": ("link", "libcudart.so.12.8.90"),
        "usr/lib/x86_64-linux-gnu/libcudnn.so.9.8.0": b"\x7fELF",
        "usr/lib/x86_64-linux-gnu/libcudnn.so.9": ("link", "libcudnn.so.9.8.0"),
        "usr/include/x86_64-linux-gnu/cudnn_version_v9.h":
            "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 8\n#define CUDNN_PATCHLEVEL 0\n",
    })
    frameworks = layer({
        f"{SITE}/torch-2.7.0+cu128.dist-info/METADATA":
            "Metadata-Version: 2.1\nName: torch\nVersion: 2.7.0+cu128\n"
            "Requires-Dist: nvidia-cudnn-cu12==9.7.1.26; platform_system == \"Linux\"\n",
        f"{SITE}/torch/version.py": "__version__ = '2.7.0+cu128'\ncuda: Optional[str] = '12.8'\n",
        f"{SITE}/torch/lib/libtorch_cuda.so": b"\x7fELF",
        f"{SITE}/tensorflow-2.15.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: tensorflow\nVersion: 2.15.0\n",
    }, compress=False)
    cleanup = layer({f"{SITE}/.wh.tensorflow-2.15.0.dist-info": b""})
    return [base, frameworks, cleanup]


@pytest.fixture
def node(machine: Machine, tmp_path: Path) -> Machine:
    """This node: driver 550.54.15 (CUDA 12.4) with one H100."""
    fake_nvml(tmp_path / "driver", driver="550.54.15", cuda=12040)
    machine.add_library_path(tmp_path / "driver")
    return machine


def assert_cuda_image_judged(data: dict) -> None:
    validate(data)
    image = data["image"]
    assert (image["os"], image["arch"], image["layers"]) == ("linux", "amd64", 3)
    assert image["env"]["NV_CUDNN_VERSION"] == "9.8.0.87"
    assert {c["from"] for c in image["cuda"]} >= {"CUDA_VERSION=12.8.1", "/usr/local/cuda-12.8/version.json says "
                                                   "CUDA 12.8.1", "/usr/local/cuda-12.8/targets/x86_64-linux/lib/"
                                                                  "libcudart.so.12.8.90"}
    assert image["cudnn"] == [{"path": "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.8.0", "version": "9.8.0",
                               "source": "layer file name"}]
    [torch] = image["frameworks"]  # TensorFlow's dist-info is whited out by the third layer
    assert (torch["name"], torch["version"], torch["cuda_built_for"]) == ("torch", "2.7.0+cu128", "12.8")
    assert torch["location"] == f"/{SITE}/torch-2.7.0+cu128.dist-info"
    assert data["needs"]["cuda"] == "12.8" and data["needs"]["min_driver"] == "570.26"
    assert data["node"]["driver"]["version"] == "550.54.15"
    [needs] = [f for f in data["findings"] if f["code"] == "CD150"]
    assert "needs CUDA 12.8" in needs["detail"] and "550.54.15 supports CUDA 12.4" in needs["detail"]
    assert "570.26" in needs["fix"]
    assert data["exit_code"] == 1


def test_an_oci_layout_is_judged_against_this_nodes_driver(node: Machine, tmp_path: Path) -> None:
    layers = cuda_image_layers()
    folder = oci_layout(tmp_path / "oci", config_of(ENV, layers=layers), layers)
    result = node.run("image", str(folder), "--json")
    assert result.exit_code == 1, result.stderr
    data = result.json
    assert data["schema"] == "cudnn-doctor/image/1" and data["image"]["source"] == "oci-layout"
    assert_cuda_image_judged(data)

    text = node.run("image", str(folder))
    assert "needs driver >= 570.26 (CUDA 12.8, from NVIDIA_REQUIRE_CUDA=cuda>=12.8" in text.stdout
    assert "this node has 550.54.15 (CUDA 12.4), 1 GPU: NVIDIA H100 80GB HBM3" in text.stdout
    assert text.exit_code == 1


def test_a_docker_save_archive(node: Machine, tmp_path: Path) -> None:
    layers = cuda_image_layers()
    archive = docker_archive(tmp_path / "app.tar", config_of(ENV, layers=layers), layers)
    data = node.run("image", str(archive), "--json").json
    assert data["image"]["source"] == "docker-archive" and data["image"]["reference"].endswith("(app:1)")
    assert_cuda_image_judged(data)


def test_an_image_from_a_registry_on_127_0_0_1(node: Machine, tmp_path: Path) -> None:
    if shutil.which("docker-registry") is None and shutil.which("registry") is None:
        pytest.skip("docker-registry is not installed (.ci/run installs Debian's)")
    layers = cuda_image_layers()
    config = config_of(ENV, layers=layers)
    with registry(tmp_path / "registry") as base:
        pushed = push(base, "team/cuda-app", "12.8", config, layers)
        host = base.removeprefix("http://")
        data = node.run("image", f"{host}/team/cuda-app:12.8", "--json").json
        assert data["image"]["source"] == "registry" and data["image"]["digest"] == pushed
        assert_cuda_image_judged(data)
        by_digest = node.run("image", f"{host}/team/cuda-app@{pushed}", "--json").json
        assert by_digest["image"]["digest"] == pushed
        missing = node.run("image", f"{host}/team/cuda-app:nope", "--json")
        assert missing.exit_code == 2 and "has no such image" in missing.json["error"]["message"]


def test_an_image_that_fits_the_node(machine: Machine, tmp_path: Path) -> None:
    fake_nvml(tmp_path / "driver", driver="570.124.06", cuda=12080)
    machine.add_library_path(tmp_path / "driver")
    layers = cuda_image_layers()
    folder = oci_layout(tmp_path / "oci", config_of(ENV, layers=layers), layers)
    result = machine.run("image", str(folder))
    assert result.exit_code == 0 and "The image fits this node." in result.stdout


def test_an_arm64_image_on_this_node_and_a_baked_in_driver(node: Machine, tmp_path: Path) -> None:
    layers = [layer({"usr/lib/aarch64-linux-gnu/libcuda.so.1": b"\x7fELF"})]
    folder = oci_layout(tmp_path / "oci", config_of({"CUDA_VERSION": "12.4.1"}, arch="arm64", layers=layers), layers)
    data = node.run("image", str(folder), "--json").json
    validate(data)
    assert {"CD155", "CD156"} <= codes(data) and "CD150" not in codes(data)
    [arch] = [f for f in data["findings"] if f["code"] == "CD155"]
    assert "linux/arm64" in arch["detail"] and "--platform linux/amd64" in arch["fix"]


# --- hostile images -------------------------------------------------------------------------------------------------

def test_names_that_climb_out_are_refused_and_nothing_is_written(node: Machine, tmp_path: Path) -> None:
    deep = "/".join(["d" * 200] * 30) + "/site-packages/torch-2.7.0.dist-info/METADATA"  # 6000 characters
    layers = [layer({"../../../../tmp/escaped-by-image": b"x", f"{SITE}/../../../../../etc/evil-METADATA": b"x",
                     f"{SITE}/ok-1.0.dist-info/METADATA": "Name: ok\nVersion: 1.0\n",
                     deep: "Name: torch\nVersion: 2.7.0\n"})]
    folder = oci_layout(tmp_path / "oci", config_of({}, layers=layers), layers)
    data = node.run("image", str(folder), "--json").json
    assert data["exit_code"] == 0
    assert any("climbs out" in note and "escaped-by-image" in note for note in data["image"]["notes"])
    assert any("a folder too deep to read its Python packages" in note for note in data["image"]["notes"])
    assert not Path("/tmp/escaped-by-image").exists() and not (tmp_path / "escaped-by-image").exists()


def test_a_digest_that_is_a_path_is_refused(node: Machine, tmp_path: Path) -> None:
    layers = [layer({"a": b"b"})]
    folder = oci_layout(tmp_path / "oci", config_of({}, layers=layers), layers)
    index = json.loads((folder / "index.json").read_text())
    index["manifests"][0]["digest"] = "sha256:../../../../etc/passwd"
    (folder / "index.json").write_text(json.dumps(index))
    result = node.run("image", str(folder), "--json")
    assert result.exit_code == 2 and "a digest that is not one" in result.json["error"]["message"]


def test_a_layer_changed_after_its_digest_was_taken(node: Machine, tmp_path: Path) -> None:
    layers = [layer({f"{SITE}/ok-1.0.dist-info/METADATA": "Name: ok\nVersion: 1.0\n"})]
    folder = oci_layout(tmp_path / "oci", config_of({}, layers=layers), layers)
    blob = folder / "blobs" / "sha256" / digest(layers[0][0]).split(":")[1]
    blob.write_bytes(layer({f"{SITE}/evil-6.6.dist-info/METADATA": "Name: evil\n"})[0])
    result = node.run("image", str(folder), "--json")
    assert result.exit_code == 2 and "does not match its digest" in result.json["error"]["message"]


def test_a_truncated_layer_and_a_huge_member(node: Machine, tmp_path: Path) -> None:
    blob, media_type = layer({f"{SITE}/torch-2.7.0.dist-info/METADATA": ("big", 3 << 20),
                              "usr/share/doc/a-large-file": ("big", 8 << 20)})
    folder = oci_layout(tmp_path / "big", config_of({}, layers=[(blob, media_type)]), [(blob, media_type)])
    data = node.run("image", str(folder), "--json").json
    assert any("METADATA is 3145728 bytes, too big for what it is" in note for note in data["image"]["notes"])
    node.env["CUDNN_DOCTOR_IMAGE_MAX_LAYER_BYTES"] = str(4 << 20)
    stopped = node.run("image", str(folder), "--json").json
    assert any("stopped at 4194304 bytes" in note for note in stopped["image"]["notes"])

    del node.env["CUDNN_DOCTOR_IMAGE_MAX_LAYER_BYTES"]
    cut = [(blob[: len(blob) // 2], media_type)]
    truncated = oci_layout(tmp_path / "cut", config_of({}), cut)  # its digest is of the cut blob: only gzip can tell
    result = node.run("image", str(truncated), "--json")
    assert result.exit_code == 2 and "cannot be read to its end" in result.json["error"]["message"]


def test_a_layer_of_several_gzip_members_is_read_whole(node: Machine, tmp_path: Path) -> None:
    """A gzip'd layer written as several members one after another (pigz, a writer that flushes members, `cat a.gz
    b.gz`): gzip -d and Go's reader, which docker and containerd unpack layers with, go on with each member, so the
    tar's files in the second are the image's. They were ignored (read as trailing bytes after the first member): the
    image's cuDNN went unseen. Bytes after the last member (zeros) are ignored, as gzip does; a member cut short is
    still an error."""
    import gzip

    [base, *rest] = cuda_image_layers()
    tar = gzip.decompress(base[0])
    cut = 1536  # within the first files: the cuDNN library's header lies in the second member
    blob = gzip.compress(tar[:cut], mtime=0) + gzip.compress(tar[cut:], mtime=0) + b"\0" * 1024
    layers = [(blob, base[1]), *rest]
    folder = oci_layout(tmp_path / "oci", config_of(ENV, layers=layers), layers)
    assert_cuda_image_judged(node.run("image", str(folder), "--json").json)
    short = [(gzip.compress(tar[:cut], mtime=0) + gzip.compress(tar[cut:], mtime=0)[:-9], base[1]), *rest]
    result = node.run("image", str(oci_layout(tmp_path / "short", config_of(ENV), short)), "--json")
    assert result.exit_code == 2 and "cannot be read to its end" in result.json["error"]["message"], result.json
