"""probes/origin: one answer, for every library a probe names, of how its file came into the program (libcuda, NVML,
the CUDA libraries a loading child mapped, NCCL). Before it, the loading children split LD_LIBRARY_PATH at ':' only
and never expanded its tokens, and NCCL's probe never looked at LD_PRELOAD: three answers for one question."""

from __future__ import annotations

import os
from pathlib import Path

from cudnn_doctor.model import SeenLibrary
from cudnn_doctor.probes.context import SearchContext
from cudnn_doctor.probes.loading import with_how_it_came
from cudnn_doctor.probes.origin import SYSTEM, origin


def _library(folder: Path, name: str = "libcublas.so.13") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(b"\x7fELF")
    return folder / name


def _seen(path: Path, soname: str = "libcublas.so.13", own: str | None = None, how: str = "mapped") -> SeenLibrary:
    return SeenLibrary(soname=soname, how=how, path=str(path), said="ok", own=own)


def test_a_folder_after_a_semicolon_in_ld_library_path_is_how_a_mapped_library_came(tmp_path: Path) -> None:
    """ld.so splits LD_LIBRARY_PATH at ';' as at ':' (ld.so(8)); the loading child's answer said 'the loader's
    cache' for a copy that came from the second folder."""
    copy = _library(tmp_path / "second")
    ctx = SearchContext(env={"LD_LIBRARY_PATH": f"{tmp_path / 'first'};{tmp_path / 'second'}"})
    seen = with_how_it_came(_seen(copy), ctx)
    assert (seen.via, seen.via_entry, seen.real) == ("LD_LIBRARY_PATH", str(tmp_path / "second"), str(copy))


def test_an_entry_written_with_a_loader_token_is_the_folder_ld_so_searched(tmp_path: Path) -> None:
    """$LIB expanded as ld.so expands it for this process (the old loading answer compared the entry as written)."""
    from cudnn_doctor.variables import loader_lib_token

    copy = _library(tmp_path / loader_lib_token() / "cuda")
    ctx = SearchContext(env={"LD_LIBRARY_PATH": f"{tmp_path}/$LIB/cuda"})
    assert origin(str(copy), "libcublas.so.13", ctx) == ("LD_LIBRARY_PATH", str(copy.parent))
    assert with_how_it_came(_seen(copy), ctx).via == "LD_LIBRARY_PATH"


def test_preload_then_library_path_then_own_wheel_then_runpath(tmp_path: Path) -> None:
    """ld.so's order, one function for every caller."""
    wheel = _library(tmp_path / "site-packages" / "nvidia" / "cublas" / "lib")
    linked = tmp_path / "on-path"
    linked.mkdir()
    os.symlink(wheel, linked / "libcublas.so.13")
    seen = _seen(linked / "libcublas.so.13", own=str(wheel), how="mapped")
    assert origin(str(wheel), "libcublas.so.13", SearchContext(env={}), own=str(wheel)) == ("its own wheel", None)
    assert origin(str(wheel), "libcublas.so.13", SearchContext(env={})) == ("RUNPATH", None)  # a wheel's folder
    assert origin(str(wheel), "libcublas.so.13", SearchContext(env={}), runpath=False) == (SYSTEM, None)
    on_path = SearchContext(env={"LD_LIBRARY_PATH": str(linked)})
    assert with_how_it_came(seen, on_path).via == "LD_LIBRARY_PATH"
    preloaded = SearchContext(env={"LD_LIBRARY_PATH": str(linked), "LD_PRELOAD": f"x.so {wheel}"})
    assert (with_how_it_came(seen, preloaded).via, with_how_it_came(seen, preloaded).via_entry) == (
        "LD_PRELOAD", str(wheel))
    assert origin(str(wheel), "libcublas.so.13", SearchContext(env={"LD_PRELOAD": "libcublas.so.13"})) == (
        "LD_PRELOAD", "libcublas.so.13")  # a bare name: the soname it names


def test_a_library_the_child_did_not_map_has_no_origin(tmp_path: Path) -> None:
    seen = with_how_it_came(SeenLibrary(soname="libcufft.so.12", how="by name", path=None, said="not found"),
                           SearchContext(env={}))
    assert (seen.via, seen.via_entry, seen.real) == (SYSTEM, None, None)
