"""The one reader of /proc/self/maps (cudnn_doctor/_proc_maps.py): the kernel writes a newline in a mapped file's
name as the four bytes \\012 and a backslash as it is, so the name a line stands for is asked of the file system (the
line's device and inode), and what a child says was mapped is the file the loader opened, whatever its folder's name."""

from __future__ import annotations

import ctypes.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_doctor import _proc_maps
from tests.fakes.build import fake_cudnn
from tests.test_frameworks import CUDNN9, install_torch, python_env
from tests.test_process_env import gpu_machine

PACKAGE = Path(_proc_maps.__file__).parent
LIBZ = ctypes.util.find_library("z")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/maps is Linux's")


def _a_copy_of_libz(folder: Path) -> Path:
    """A copy of the system's libz in FOLDER: a real shared object the loader maps under that name."""
    found = next(p for p in (Path("/lib/x86_64-linux-gnu"), Path("/usr/lib/x86_64-linux-gnu"), Path("/lib64"),
                             Path("/usr/lib64"), Path("/lib"), Path("/usr/lib")) if (p / str(LIBZ)).exists())
    folder.mkdir(parents=True)
    shutil.copyfile(found / str(LIBZ), folder / "libz.so.1")
    return folder / "libz.so.1"


@pytest.mark.skipif(LIBZ is None, reason="no libz to copy")
def test_a_newline_in_a_mapped_name_comes_back_as_the_file_the_loader_opened(tmp_path: Path) -> None:
    """Three copies of one library, in a folder named with a newline, one named with the four bytes \\012 (which
    the kernel writes the same way) and one with both: each read back as the file that was loaded. Before, the first
    came back with \\012 in its name, a file that does not exist."""
    copies = [_a_copy_of_libz(tmp_path / name) for name in ("a\nb", "c\\012d", "e\\012f\ng")]
    program = ("import ctypes, json, sys\n"
               f"sys.path.insert(0, {str(PACKAGE)!r})\n"
               "import _proc_maps\n"
               "for path in json.loads(sys.argv[1]): ctypes.CDLL(path)\n"
               "print(json.dumps([p for p in _proc_maps.mapped_files() if 'libz' in p]))\n")
    done = subprocess.run([sys.executable, "-I", "-c", program, json.dumps([str(p) for p in copies])],
                          capture_output=True, text=True, check=True)
    said = json.loads(done.stdout)
    assert sorted(said) == sorted(str(c) for c in copies), said


def test_a_name_whose_file_is_gone_reads_the_escape_as_the_kernel_wrote_it() -> None:
    """A line whose file exists under neither reading (deleted since, an overlay's lower file): the escape is the
    newline the kernel wrote it for. A number of escapes past MAX_CHOICES is read so without a stat for each way."""
    assert _proc_maps.unescaped(b"/nowhere/a\\012b/libz.so.1", b"fe:00", b"1") == b"/nowhere/a\nb/libz.so.1"
    many = b"/nowhere/" + b"x\\012" * (_proc_maps.MAX_CHOICES + 1)
    assert _proc_maps.unescaped(many, b"zz", b"") == many.replace(b"\\012", b"\n")


@pytest.mark.parametrize("folder", ["cudnn-90000\nhere", "cudnn-90000"])
def test_a_preloaded_sublibrary_in_a_folder_named_with_a_newline_is_still_the_one_error(machine, tmp_path: Path,
                                                                                        folder: str) -> None:
    """LD_PRELOAD of another release's libcudnn_adv.so.9 (9.0 beside torch's 9.1), its folder named with a newline
    (round twenty-one's r26 red-team): the children that load as the program does say what was mapped, and the
    preload (CD317) is the one error with the sub-library torch then gets (CD305) following from it, as without
    the newline. Before, the mapped name came back as \\012 and CD305 was not raised."""
    gpu_machine(machine, tmp_path, gpus=1)
    install_torch(python_env(machine, tmp_path))
    other = tmp_path / folder
    fake_cudnn(other, version=90000, sublibraries=CUDNN9)
    entry = str(other / "libcudnn_adv.so.9")
    machine.env["LD_PRELOAD"] = entry
    report = machine.check_json()
    errors = [(f["code"], f["subject"]) for f in report["findings"] if f["severity"] == "error"]
    assert errors == [("CD317", entry)], report["findings"]
    following = {f["code"] for f in report["findings"] if f["detail"].startswith(f"Follows from LD_PRELOAD's {entry}")}
    assert "CD305" in following, report["findings"]
    assert not [f for f in report["findings"] if "\\012" in json.dumps(f, ensure_ascii=False)], report["findings"]


def test_every_reader_of_proc_maps_is_the_one() -> None:
    """No module of the package opens /proc/self/maps but _proc_maps (entry.py's leak-checker test reads the raw
    bytes for a library's name, not a path, and says so)."""
    readers = sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                     if 'open("/proc/self/maps"' in path.read_text(encoding="utf-8"))
    assert readers == ["_proc_maps.py", "entry.py"], readers
    assert os.path.basename(_proc_maps.__file__) == "_proc_maps.py"
