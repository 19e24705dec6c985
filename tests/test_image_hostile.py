"""Issue 43, class 6: `image` against hostile images. Every JSON field of an OCI index, manifest and configuration,
and of docker's manifest.json, given each wrong type; a docker-save archive cut at many points; a pax header or GNU
long name claiming 400 MB; a layer of 100,000 empty members; 30,000 whiteouts over 10,000 paths; a sparse 100 GiB
blob declared as 10 KiB. Each ends in one line and exit 2 (or a judged image), bounded in memory and bytes read."""

from __future__ import annotations

import copy
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, Machine
from tests.images import (
    LAYER_GZIP,
    LAYER_TAR,
    config_of,
    digest,
    docker_archive,
    gzip_stream,
    layer,
    manifest_of,
    saved_earlier,
    tar_header,
)
from tests.test_image import ENV, cuda_image_layers

WRONG = (None, 7, "text", [1], {"a": 1}, True)


def write_layout(folder: Path, config: bytes, manifest_doc: dict[str, Any], index_doc: dict[str, Any],
                 blobs: list[bytes]) -> Path:
    """An OCI layout from documents as given (a wrong type included), each blob under its own digest."""
    manifest = json.dumps(manifest_doc).encode()
    store = folder / "blobs" / "sha256"
    store.mkdir(parents=True, exist_ok=True)
    for blob in (config, manifest, *blobs):
        (store / digest(blob).split(":")[1]).write_bytes(blob)
    (folder / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (folder / "index.json").write_text(json.dumps(index_doc))
    return folder


def index_of(manifest: bytes) -> dict[str, Any]:
    return {"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                                               "digest": digest(manifest), "size": len(manifest),
                                               "platform": {"os": "linux", "architecture": "amd64"}}]}


def put(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    document = copy.deepcopy(document)
    if not path:
        return value
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return document


CONFIG_PATHS = (("architecture",), ("os",), ("config",), ("config", "Env"), ("config", "Env", 0), ("config", "Labels"),
                ("rootfs",), ())
MANIFEST_PATHS = (("config",), ("config", "digest"), ("layers",), ("layers", 0), ("layers", 0, "digest"),
                  ("layers", 0, "size"), ("layers", 0, "mediaType"), ("mediaType",), ())
INDEX_PATHS = (("manifests",), ("manifests", 0), ("manifests", 0, "digest"), ("manifests", 0, "platform"),
               ("manifests", 0, "platform", "architecture"), ("mediaType",), ())
ARCHIVE_PATHS = ((), (0,), (0, "Config"), (0, "Layers"), (0, "Layers", 0), (0, "RepoTags"), (0, "RepoTags", 0))


def assert_one_line(result: Any) -> None:
    assert result.exit_code in (0, 1, 2), result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr.lower(), result.stderr


@pytest.mark.parametrize("where", ["config", "manifest", "index"])
def test_wrong_json_types_in_an_oci_layout(machine_in_process: Machine, tmp_path: Path, where: str) -> None:
    layers = cuda_image_layers()
    config_doc = json.loads(config_of(ENV, layers=layers))
    blobs = [b for b, _ in layers]
    paths = {"config": CONFIG_PATHS, "manifest": MANIFEST_PATHS, "index": INDEX_PATHS}[where]
    for number, (path, value) in enumerate((p, v) for p in paths for v in WRONG):
        config = json.dumps(put(config_doc, path, value) if where == "config" else config_doc).encode()
        manifest_doc = json.loads(manifest_of(config, layers))
        if where == "manifest":
            manifest_doc = put(manifest_doc, path, value)
        index_doc = index_of(json.dumps(manifest_doc).encode())
        if where == "index":
            index_doc = put(index_doc, path, value)
        folder = write_layout(tmp_path / f"{where}{number}", config, manifest_doc, index_doc, blobs)
        result = machine_in_process.run("image", str(folder), "--json")
        assert_one_line(result)
        json.loads(result.stdout)


def test_wrong_json_types_in_dockers_manifest_json(machine_in_process: Machine, tmp_path: Path) -> None:
    import io
    import tarfile

    layers = cuda_image_layers()
    archive = docker_archive(tmp_path / "app.tar", config_of(ENV, layers=layers), layers)
    with tarfile.open(archive) as source:
        members = {m.name: source.extractfile(m).read() for m in source.getmembers()}  # type: ignore[union-attr]
    listing = json.loads(members["manifest.json"])
    for number, (path, value) in enumerate((p, v) for p in ARCHIVE_PATHS for v in WRONG):
        members["manifest.json"] = json.dumps(put(listing, path, value)).encode()
        changed = tmp_path / f"changed{number}.tar"
        with tarfile.open(changed, "w") as out:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                out.addfile(info, io.BytesIO(data))
        assert_one_line(machine_in_process.run("image", str(saved_earlier(changed)), "--json"))


def test_a_docker_save_archive_cut_anywhere(machine_in_process: Machine, tmp_path: Path) -> None:
    layers = cuda_image_layers()
    import tarfile

    path = docker_archive(tmp_path / "app.tar", config_of(ENV, layers=layers), layers)
    whole = path.read_bytes()
    with tarfile.open(path) as archive:  # where its last member's data ends: after it, only the end's zero blocks
        end = max(m.offset_data + m.size for m in archive.getmembers())
    for number, cut in enumerate(range(700, end, max(1, (end - 700) // 23))):
        cut_file = tmp_path / f"cut{number}.tar"
        cut_file.write_bytes(whole[:cut])
        result = machine_in_process.run("image", str(saved_earlier(cut_file)), "--json")
        assert_one_line(result)
        assert result.exit_code == 2, (cut, result.stdout)


def peak_rss_mib(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """(the peak resident memory of `cudnn-doctor ARGS` in MiB, its JSON output), measured by the kernel."""
    program = ("import resource, subprocess, sys\n"
               "done = subprocess.run([sys.executable, '-m', 'cudnn_doctor', *sys.argv[1:]], capture_output=True, "
               "text=True, stdin=subprocess.DEVNULL)\n"
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)\nprint(done.stdout)\n")
    answer = subprocess.run([sys.executable, "-c", program, *args], capture_output=True, text=True, env=env,
                            timeout=120, cwd=ROOT)
    peak, _, out = answer.stdout.partition("\n")
    return int(peak), out


def one_layer_layout(folder: Path, blob: bytes, media_type: str = LAYER_GZIP) -> Path:
    config = config_of(ENV)
    manifest = json.loads(manifest_of(config, [(blob, media_type)]))
    return write_layout(folder, config, manifest, index_of(json.dumps(manifest).encode()), [blob])


@pytest.mark.parametrize("kind", [b"x", b"L"])
def test_an_extended_header_claiming_400_mb_is_refused_unread(machine: Machine, tmp_path: Path, kind: bytes) -> None:
    """A pax header (x) or GNU long name (L) of 400 MB, gzip'd to 2 MB: refused at its header, not read."""
    size = 400 << 20
    chunks = (bytes(1 << 20) for _ in range(size >> 20))
    blob = gzip_stream(iter([tar_header(b"././@LongLink" if kind == b"L" else b"pax", size, kind), *chunks,
                             bytes(1024)]))
    folder = one_layer_layout(tmp_path / "oci", blob)
    peak, out = peak_rss_mib(["image", str(folder), "--json"], machine.env)
    data = json.loads(out)
    assert data["exit_code"] == 2 and "extended header" in data["error"]["message"], data
    assert peak < 200, f"{peak} MiB"


def test_a_layer_of_100000_empty_members_keeps_memory_flat(machine: Machine, tmp_path: Path) -> None:
    def blob(count: int) -> bytes:
        return gzip_stream(iter([*(tar_header(b"e/%d" % i, 0) for i in range(count)), bytes(1024)]))

    small, _ = peak_rss_mib(["image", str(one_layer_layout(tmp_path / "few", blob(1000))), "--json"], machine.env)
    large, out = peak_rss_mib(["image", str(one_layer_layout(tmp_path / "many", blob(100_000))), "--json"],
                              machine.env)
    assert json.loads(out)["exit_code"] in (0, 1), out
    assert large - small < 25, (small, large)  # 100,000 members kept took some 100 MiB more


def test_30000_whiteouts_over_10000_paths_merge_in_linear_time(machine: Machine, tmp_path: Path) -> None:
    """The merge looks each path up by its folders; against every path for each whiteout it took minutes here."""
    lower = b"".join(tar_header(b"usr/lib/d%d/libcudnn.so.9" % i, 0) for i in range(10_000)) + bytes(1024)
    upper = b"".join(tar_header(b"opt/x%d/.wh.gone" % i, 0) for i in range(30_000)) + bytes(1024)
    config = config_of(ENV)
    layers = [(lower, LAYER_TAR), (upper, LAYER_TAR)]
    manifest = json.loads(manifest_of(config, layers))
    folder = write_layout(tmp_path / "oci", config, manifest, index_of(json.dumps(manifest).encode()), [lower, upper])
    result = machine.run("image", str(folder), "--json", timeout=40)
    assert result.json["image"]["layers"] == 2, result.stdout


def test_a_sparse_blob_larger_than_declared_is_not_read_past_its_size(machine: Machine, tmp_path: Path) -> None:
    declared = layer({"etc/hostname": "box\n"}, compress=False)[0]
    folder = one_layer_layout(tmp_path / "oci", declared, LAYER_TAR)
    blob = folder / "blobs" / "sha256" / digest(declared).split(":")[1]
    os.truncate(blob, 100 << 30)  # sparse: 100 GiB that takes no disk
    result = machine.run("image", str(folder), "--json", timeout=40)
    assert result.exit_code == 2 and "longer than the" in result.json["error"]["message"], result.stdout


def test_a_gnu_sparse_member_is_read_not_called_cut_short(machine: Machine, tmp_path: Path) -> None:
    """GNU tar's --sparse stores a 10 MiB file of one 4 KiB extent in a few blocks: the layer is whole."""
    import shutil

    if shutil.which("tar") is None:
        pytest.skip("GNU tar makes the sparse member")
    files = tmp_path / "files" / "usr"
    files.mkdir(parents=True)
    with open(files / "sparse.img", "wb") as out:
        out.truncate(10 << 20)
        out.seek(5 << 20)
        out.write(b"x" * 4096)
    archive = tmp_path / "layer.tar"
    subprocess.run(["tar", "--sparse", "--format=gnu", "-cf", str(archive), "-C", str(tmp_path / "files"), "usr"],
                   check=True, timeout=60)
    folder = one_layer_layout(tmp_path / "oci", archive.read_bytes(), LAYER_TAR)
    result = machine.run("image", str(folder), "--json")
    assert result.exit_code in (0, 1) and result.json["image"]["layers"] == 1, result.stdout


def test_many_large_metadata_files_keep_memory_bounded(machine: Machine, tmp_path: Path) -> None:
    """300 METADATA files of 1 MiB each (what is read of a small file) in one layer: the text kept is bounded
    (64 MiB), not 300 MiB."""
    site = b"usr/lib/python3/dist-packages/"
    parts = []
    for index in range(300):
        parts.append(tar_header(site + b"p%d-1.0.dist-info/METADATA" % index, 1 << 20))
        text = b"Name: p%d\nVersion: 1.0\n" % index
        parts.append(text + b"x" * ((1 << 20) - len(text)))  # a whole number of blocks: no padding
    blob = gzip_stream(iter([*parts, bytes(1024)]))
    peak, out = peak_rss_mib(["image", str(one_layer_layout(tmp_path / "oci", blob)), "--json"], machine.env)
    data = json.loads(out)
    assert data["exit_code"] in (0, 1) and any("small files read so far" in note for note in data["image"]["notes"]), \
        data["image"]["notes"]
    assert peak < 250, f"{peak} MiB"


def test_a_damaged_header_mid_layer_is_an_error_not_the_end(machine: Machine, tmp_path: Path) -> None:
    """A member whose data is not padded to its block: the next header is garbage. tarfile took it for the end of
    the layer and read no further; docker's Go reader refuses such a layer, and so does the doctor."""
    site = b"usr/lib/python3/dist-packages/"
    text = b"Name: p\nVersion: 1.0\n"
    blob = b"".join([tar_header(site + b"p-1.0.dist-info/METADATA", len(text)), text,  # no padding after it
                     tar_header(site + b"q-1.0.dist-info/METADATA", len(text)), text, bytes(1024)])
    result = machine.run("image", str(one_layer_layout(tmp_path / "oci", blob, LAYER_TAR)), "--json")
    assert result.exit_code == 2 and "damaged tar header" in result.json["error"]["message"], result.stdout


def test_a_manifest_of_50000_layers_is_refused_before_any_is_read(machine_in_process: Machine, tmp_path: Path) -> None:
    small = layer({"etc/hostname": "box\n"}, compress=False)
    config = config_of(ENV)
    manifest = json.loads(manifest_of(config, [small] * 50_000))
    folder = write_layout(tmp_path / "oci", config, manifest, index_of(json.dumps(manifest).encode()), [small[0]])
    result = machine_in_process.run("image", str(folder), "--json")
    assert result.exit_code == 2 and "50000 layers" in result.json["error"]["message"], result.stdout


@pytest.mark.parametrize("compression", ["", "gz"])
def test_an_archive_cut_in_its_end_marker_or_padding_is_cut_short(compression: str, machine_in_process: Machine,
                                                                  tmp_path: Path) -> None:
    """Issue 43, class 6: a tar is whole 512-byte blocks; a copy cut after its last member's data, inside the end
    marker or the record padding, is refused as cut short (exit 2), gzip'd or not; cut at a block boundary it is
    what Go's archive/tar (docker load) reads whole, and so is it here."""
    import gzip
    import tarfile

    layers = cuda_image_layers()
    path = docker_archive(tmp_path / "app.tar", config_of(ENV, layers=layers), layers)
    whole = path.read_bytes()
    with tarfile.open(path) as archive:
        end = max(m.offset_data + m.size for m in archive.getmembers())
    end += -end % 512
    for number, cut in enumerate([end + 1, end + 300, end + 700, end + 1023, len(whole) - 700, len(whole) - 1,
                                  end + 512, end + 1024]):
        data = whole[:cut]
        cut_file = tmp_path / f"cut{number}.tar{'.gz' if compression else ''}"
        cut_file.write_bytes(gzip.compress(data, mtime=0) if compression else data)
        result = machine_in_process.run("image", str(saved_earlier(cut_file)), "--json")
        assert_one_line(result)
        if cut % 512:
            assert result.exit_code == 2, (cut, result.stdout)
            assert "512-byte" in result.stdout or "inside a header" in result.stdout, (cut, result.stdout)
        else:
            assert result.exit_code in (0, 1), (cut, result.stdout)


def test_a_layer_whose_own_tar_is_cut_in_its_padding_is_cut_short(machine_in_process: Machine, tmp_path: Path) -> None:
    """The same rule for a layer's own tar stream (a docker save's layer.tar is not checked by a digest)."""
    blob, _ = layer({"usr/local/cuda-12.8/version.json": '{"cuda": {"version": "12.8.1"}}'}, compress=False)
    cut = (blob[:len(blob) - 700], LAYER_TAR)
    path = docker_archive(tmp_path / "app.tar", config_of(ENV, layers=[cut]), [cut])
    result = machine_in_process.run("image", str(path), "--json")
    assert_one_line(result)
    assert result.exit_code == 2 and "512-byte" in result.stdout, result.stdout


def test_an_archive_gzipped_as_a_whole_that_inflates_without_end_is_refused_at_once(machine_in_process: Machine,
                                                                                     tmp_path: Path) -> None:
    """A docker save gzip'd as a whole has no random access: reading it costs decompressing up to each member. A
    member claiming 4 GiB of zeros (4 MB of gzip) is refused before its bytes are inflated, where it was read for
    seconds a GiB; README's bounds table says how far such an archive is read."""
    import gzip
    import tarfile

    filler = tarfile.TarInfo("filler")
    filler.size = 4 << 30
    manifest = tarfile.TarInfo("manifest.json")
    manifest.size = 2
    mib_of_zeros = gzip.compress(bytes(1 << 20), compresslevel=9, mtime=0)  # gzip members, concatenated, are one
    path = tmp_path / "bomb.tar.gz"
    with open(path, "wb") as out:
        out.write(gzip.compress(filler.tobuf(), mtime=0))
        for _ in range(4 << 10):
            out.write(mib_of_zeros)
        out.write(gzip.compress(manifest.tobuf() + b"[]".ljust(512, b"\0") + bytes(1024), mtime=0))
    started = time.monotonic()
    result = machine_in_process.run("image", str(path), "--json")
    assert_one_line(result)
    assert result.exit_code == 2 and "compressed as a whole" in result.stdout, result.stdout
    assert time.monotonic() - started < 5


def test_a_gzip_layer_that_inflates_a_thousandfold_is_stopped_at_its_bound(machine_in_process: Machine,
                                                                          tmp_path: Path) -> None:
    """A 4 MB gzip layer of 4 GiB of zeros (a bomb) is read no further than 64 times its size and 1 GiB, said in a
    note, in seconds; the 64 GiB layer bound alone let it be inflated for a minute."""
    import gzip
    import tarfile

    filler = tarfile.TarInfo("filler")
    filler.size = 4 << 30
    mib_of_zeros = gzip.compress(bytes(1 << 20), compresslevel=9, mtime=0)
    blob = gzip.compress(filler.tobuf(), mtime=0) + mib_of_zeros * (4 << 10) + gzip.compress(bytes(1024), mtime=0)
    folder = one_layer_layout(tmp_path / "bomb", blob)
    started = time.monotonic()
    result = machine_in_process.run("image", str(folder), "--json")
    assert result.exit_code in (0, 1), result.stdout
    assert "times its" in result.stdout, result.stdout[-2000:]
    assert time.monotonic() - started < 10


def test_the_plain_header_reader_reads_what_tarfile_reads() -> None:
    """BoundedHeaders._plain (a fast path for plain ustar headers) against tarfile's own frombuf, over headers that
    tarfile writes (ustar, GNU, pax; long names split into a prefix; links; V7 folders; names not UTF-8) and those
    headers with random bytes changed: where _plain reads one, frombuf reads the very same member; where frombuf
    refuses one, _plain reads none."""
    import random
    import tarfile

    from cudnn_doctor.image.sources import BoundedHeaders

    fields = ("name", "mode", "uid", "gid", "size", "mtime", "chksum", "type", "linkname", "uname", "gname",
              "devmajor", "devminor")
    rng = random.Random(43)
    names = ["a", "usr/lib/x86_64-linux-gnu/libcudnn.so.9", "d/", "x" * 99, "p/" * 60 + "name", "n\udcffx", "é/ü",
             "./lead", "trail/"]
    read = 0
    for index in range(4000):
        info = tarfile.TarInfo(rng.choice(names))
        info.type = rng.choice([tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE])
        info.size = rng.choice([0, 1, 511, 1 << 33 - 1]) if info.type in (tarfile.REGTYPE, tarfile.AREGTYPE) else 0
        info.linkname = rng.choice(["", "target", "../up"]) if info.type in (tarfile.SYMTYPE, tarfile.LNKTYPE) else ""
        info.mode, info.uid, info.gid, info.mtime = rng.choice([0o644, 0o7777]), rng.randrange(70000), 0, 1_700_000_000
        form = rng.choice([tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT])
        try:
            buf = bytearray(info.tobuf(form, "utf-8", "surrogateescape")[-512:])
        except ValueError:
            continue
        for _ in range(rng.choice([0, 0, 1, 2])):
            buf[rng.randrange(512)] = rng.randrange(256)
        if index % 7 == 0:  # a changed byte whose checksum is made right again
            buf[148:156] = b"        "
            buf[148:155] = b"%06o\0" % (sum(buf) & 0o777777)
        data = bytes(buf)
        try:
            theirs = tarfile.TarInfo.frombuf(data, "utf-8", "surrogateescape")
        except tarfile.HeaderError:
            theirs = None
        mine = BoundedHeaders._plain(data, "utf-8", "surrogateescape")
        if mine is None:
            continue
        read += 1
        assert theirs is not None, data
        assert [getattr(mine, f) for f in fields] == [getattr(theirs, f) for f in fields], data
    assert read > 1000


@pytest.mark.parametrize("kind", ["fifo", "device", "fifo.tar.gz"])
def test_an_archive_that_is_a_fifo_or_a_device_is_refused_not_waited_on(machine_in_process: Machine, tmp_path: Path,
                                                                        kind: str) -> None:
    """`image` given a FIFO (which waited for a writer forever) or a device (a link to /dev/zero, read without end):
    one line, exit 2, at once."""
    path = tmp_path / ("image.tar" if kind != "fifo.tar.gz" else kind)
    if kind == "device":
        path.symlink_to("/dev/zero")
    else:
        os.mkfifo(path)
    started = time.monotonic()
    result = machine_in_process.run("image", str(path), "--json")
    assert_one_line(result)
    assert result.exit_code == 2 and "not a regular file" in result.stdout, result.stdout
    assert time.monotonic() - started < 10


def _base256_size(header: bytes, size: int) -> bytes:
    """HEADER with its size field in base-256 (GNU's form for sizes past 8 GiB) and its checksum made again."""
    block = bytearray(header)
    block[124:136] = b"\x80" + size.to_bytes(11, "big")
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block)
    return bytes(block)


def _pax_size(size: int) -> bytes:
    record = b"size=%d\n" % size
    length = len(record) + 3
    body = b"%d " % length + record
    return tar_header(b"./PaxHeaders/x", len(body), b"x") + body + bytes(-len(body) % 512)


@pytest.mark.parametrize("compression", ["", "gz"])
@pytest.mark.parametrize("claim", ["base256_2_to_the_62", "pax_size_huge", "octal_64_gib"])
def test_a_member_claiming_more_than_its_layer_can_hold_is_cut_short(claim: str, compression: str,
                                                                    machine_in_process: Machine,
                                                                    tmp_path: Path) -> None:
    """A member whose header claims more bytes than its layer blob can hold (the blob itself; deflate's 1032 to 1
    for gzip) is a layer cut short or a lying header (exit 2), not a bound reached with its findings (exit 1)."""
    import gzip

    name = b"usr/lib/x86_64-linux-gnu/libcudnn.so.9.2.0"
    if claim == "base256_2_to_the_62":
        raw = _base256_size(tar_header(name, 0), 1 << 62)
    elif claim == "pax_size_huge":
        raw = _pax_size(99_999_999_999_999) + tar_header(name, 0)
    else:
        raw = tar_header(name, 0o77777777777)
    raw += b"\x7fELF" + bytes(4092) + bytes(1024)
    blob = gzip.compress(raw, mtime=0) if compression else raw
    folder = one_layer_layout(tmp_path / "oci", blob, LAYER_GZIP if compression else LAYER_TAR)
    result = machine_in_process.run("image", str(folder), "--json")
    assert_one_line(result)
    message = result.json["error"]["message"]
    assert result.exit_code == 2 and ("cut short" in message or "cannot be read to its end" in message), message


@pytest.mark.parametrize("link, readable", [("../blobs/sha256/{L}", True), ("./../blobs/sha256/{L}", True),
                                            ("../../blobs/sha256/{L}", False), ("/blobs/sha256/{L}", False)])
def test_docker_25_layers_linked_into_blobs_are_read_and_links_out_refused(link: str, readable: bool,
                                                                          machine_in_process: Machine,
                                                                          tmp_path: Path) -> None:
    """Docker 25's `docker save` holds an OCI layout; manifest.json may name a layer by layers/<id>.tar, a symbolic
    link member to ../blobs/sha256/<id>: its '..' is resolved inside the archive, and the image read. A link that
    climbs out of the archive, or an absolute one, is still refused."""
    import gzip
    import hashlib
    import io
    import tarfile

    blob, _ = cuda_image_layers()[0]
    plain = gzip.decompress(blob)
    layer_id = hashlib.sha256(plain).hexdigest()
    config = json.loads(config_of(ENV))
    config["rootfs"]["diff_ids"] = [f"sha256:{layer_id}", f"sha256:{layer_id}"]
    config_bytes = json.dumps(config).encode()
    config_id = hashlib.sha256(config_bytes).hexdigest()
    manifest = json.dumps([{"Config": f"blobs/sha256/{config_id}", "RepoTags": ["app:1"],
                            "Layers": [f"blobs/sha256/{layer_id}", f"layers/{layer_id}.tar"]}]).encode()
    path = tmp_path / "save.tar"
    with tarfile.open(path, "w") as archive:
        for name, data in ((f"blobs/sha256/{config_id}", config_bytes), (f"blobs/sha256/{layer_id}", plain),
                           ("manifest.json", manifest)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo(f"layers/{layer_id}.tar")
        info.type, info.linkname = tarfile.SYMTYPE, link.replace("{L}", layer_id)
        archive.addfile(info)
    result = machine_in_process.run("image", str(path), "--json")
    assert_one_line(result)
    if readable:
        assert result.exit_code in (0, 1) and result.json["image"], result.stdout[-600:]
    else:
        assert result.exit_code == 2 and "does not hold as a file" in result.json["error"]["message"], result.stdout


def test_a_docker_save_gzipped_as_a_whole_is_read_in_one_pass_whatever_its_layers_order(
        machine_in_process: Machine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docker save stores its layers by name, not in their order, and gzip'd as a whole it has no random access:
    reading each layer in the image's order went back to the archive's start for each, and past 40 layers past the
    decompression bound. Layers are read in the order they lie (one forward pass after the listing, which keeps the
    small members) and merged in theirs. Here the bound is made small (12 MiB of slack, not 1 GiB) and the layers' order the
    archive's reversed: the image is read whole, its upper layer's whiteout applied to the lower one's file."""
    import gzip
    import tarfile

    from cudnn_doctor.image import sources

    monkeypatch.setattr(sources, "WHOLE_ARCHIVE_SLACK", 12 << 20)
    monkeypatch.setattr(sources, "SMALL_MEMBERS_TOTAL", 64 << 10, raising=False)  # the layers are not kept
    count, filler = 45, 96 << 10
    layers = [layer({f"opt/l{index}/zeros": bytes(filler)}, compress=False)[0] for index in range(count)]
    # the manifest lists the archive's last layer lowest: it holds CUDA 12.8 and 13.0; the highest (the archive's
    # first) whites 12.8 out, which only a merge in the image's own order does
    layers[-1] = layer({"opt/l44/zeros": bytes(filler), "usr/local/cuda-12.8/version.json": '{"cuda": {"version": '
                        '"12.8.1"}}', "usr/local/cuda-13.0/version.json": '{"cuda": {"version": "13.0.2"}}'},
                       compress=False)[0]
    layers[0] = layer({"opt/l0/zeros": bytes(filler), "usr/local/cuda-12.8/.wh.version.json": ""}, compress=False)[0]
    names = [f"{index:03d}/layer.tar" for index in range(count)]
    config = config_of(ENV, layers=[(b, LAYER_TAR) for b in layers])
    entries = dict(zip(names, layers, strict=True))
    entries["config.json"] = config
    entries["manifest.json"] = json.dumps([{"Config": "config.json", "RepoTags": ["app:1"],
                                            "Layers": names[::-1]}]).encode()  # lowest last in the archive
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name in sorted(entries):
            info = tarfile.TarInfo(name)
            info.size = len(entries[name])
            archive.addfile(info, io.BytesIO(entries[name]))
    path = tmp_path / "save.tar.gz"
    path.write_bytes(gzip.compress(buffer.getvalue(), compresslevel=1, mtime=0))
    plain, bound = len(buffer.getvalue()), 64 * path.stat().st_size + (12 << 20)
    assert 2 * plain < bound < count * plain // 4  # two passes fit; a pass back to the start for each layer does not
    result = machine_in_process.run("image", str(path), "--json")
    data = json.loads(result.stdout)
    assert "image" in data, data
    assert data["image"]["layers"] == count
    read = [c["from"] for c in data["image"]["cuda"] if "version.json" in c["from"]]
    assert read == ["/usr/local/cuda-13.0/version.json says CUDA 13.0.2"], data["image"]["cuda"]


def test_an_archive_written_while_it_is_read_is_said_as_that(tmp_path: Path) -> None:
    """A `docker save -o` still running (the file written again in place while the doctor reads it in two passes):
    its members' places no longer hold them, or one image's configuration is judged with another's layers. Said as
    what it is (exit 2 naming another program writing it), never as a damaged archive or a verdict."""
    from cudnn_doctor.errors import DoctorError
    from cudnn_doctor.image.sources import open_image

    layers = cuda_image_layers()
    path = docker_archive(tmp_path / "app.tar", config_of(ENV, layers=layers), layers)
    parts = open_image(str(path), "amd64")
    try:
        assert parts.changed() is None  # as it was opened
        with open(path, "ab") as handle:  # another program writes on
            handle.write(bytes(512))
        said = parts.changed()
    finally:
        parts.close()
    assert isinstance(said, DoctorError) and said.exit_code == 2 and said.code == "CD005", said
    assert "changed while it was read (another program is writing it" in said.message, said.message


def test_a_writer_starved_through_the_whole_read_is_still_seen_writing(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """On a loaded machine the program writing the archive may get no processor for the whole read: the file looks
    cut short and unchanged since it was opened. Modified a moment ago, it is watched (a second at the most) before
    the error is said: a write then is 'changed while it was read'. An old file, or a recent one nothing writes, is
    what it is (the old one at once)."""
    import threading

    from cudnn_doctor.image.sources import _stamp, _still_written

    path = tmp_path / "app.tar"
    path.write_bytes(bytes(700))
    with open(path, "rb") as stream:
        stamp = _stamp(stream)
        assert stamp is not None
        later = threading.Timer(0.2, lambda: path.open("ab").write(bytes(64)))
        later.start()
        try:
            assert _still_written(stream, stamp)
        finally:
            later.join()
    os.utime(path, (time.time() - 3600, time.time() - 3600))
    with open(path, "rb") as stream:
        stamp = _stamp(stream)
        assert stamp is not None
        waits: list[float] = []
        with monkeypatch.context() as patched:
            patched.setattr(time, "sleep", waits.append)
            assert not _still_written(stream, stamp)
        assert not waits  # an old file: no watch
    os.utime(path)
    with open(path, "rb") as stream:
        stamp = _stamp(stream)
        assert stamp is not None and not _still_written(stream, stamp)


def test_an_archive_still_being_written_is_never_a_verdict(machine_process: Machine, tmp_path: Path) -> None:
    """The same through the command, with the file growing all through the read (a `docker save -o` that has not
    finished, a copy in progress): exit 2 and the one line say another program is writing it, never a verdict on
    what was there at one instant, nor 'damaged'. The archive holds 16 MB of layer, so each read is long beside
    the writer's turns (with 512 KB, the writer, starved on the loaded 2-core CI for a whole read, did not change
    the archive while the doctor read it, and the verdict was right), and the writer is a process of its own."""
    layers = cuda_image_layers() + [layer({f"opt/data/{n}": os.urandom(1 << 20) for n in range(16)}, compress=False)]
    path = docker_archive(tmp_path / "app.tar", config_of(ENV, layers=layers), layers)
    code = ("import sys, time\nend = time.monotonic() + 120\nwith open(sys.argv[1], 'ab', buffering=0) as handle:\n"
            "    while time.monotonic() < end:\n        handle.write(bytes(64))\n        time.sleep(0.0002)\n")
    writer = subprocess.Popen([sys.executable, "-c", code, str(path)])
    try:
        results = [machine_process.run("image", str(path), "--json") for _ in range(2)]
    finally:
        writer.kill()
        writer.wait()
    for result in results:
        assert_one_line(result)
        assert result.exit_code == 2 and "changed while it was read" in result.stderr, (result.exit_code,
                                                                                         result.stderr)
