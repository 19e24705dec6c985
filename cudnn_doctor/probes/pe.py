"""Read what Windows itself reads from a DLL's PE headers, without loading it: the machine it was built
for, and the version in its version resource (VS_FIXEDFILEINFO, what Explorer's Properties > Details shows).

A copy of cuDNN that cannot load (its sub-libraries missing, another architecture) still has a version this
way. pefile (PyPI) reads the same, at 25-100 ms of import per start; the few structures needed are read here.
Layouts: Microsoft's "PE Format" (learn.microsoft.com/windows/win32/debug/pe-format) and VS_FIXEDFILEINFO
(learn.microsoft.com/windows/win32/api/verrsrc/ns-verrsrc-vs_fixedfileinfo).
"""

from __future__ import annotations

import mmap
import os
import struct

from cudnn_doctor.elf import read_mapped
from cudnn_doctor.records import record

MACHINES = {0x8664: "x86_64", 0xAA64: "aarch64", 0x14C: "i386", 0x1C4: "arm"}
IMPORT_DIRECTORY = 1  # the data directory's indices: the import table, the resource table
RESOURCE_DIRECTORY = 2
MAX_IMPORTS = 4096
MAX_NAME = 260  # MAX_PATH: a DLL name longer is not one the loader opens
RT_VERSION = 16
FIXED_FILE_INFO_SIGNATURE = 0xFEEF04BD
MAX_SECTIONS = 96  # the loader's own limit


class PeError(Exception):
    """The file is not a usable PE image."""


@record
class PeInfo:
    arch: str
    bits: int
    file_version: str | None  # "9.28.1.4", from the version resource; None where it has none
    imports: tuple[str, ...] = ()  # the DLLs the loader must find before it can load this one

def read_pe(path: str) -> PeInfo:
    """PATH's machine and file version; PeError if it is not a PE image."""
    def too_small(info: os.stat_result) -> str | None:
        return "not a regular file of a PE image's size" if info.st_size < 64 else None

    # mapped: a cuDNN DLL is up to hundreds of MB
    return read_mapped(path, _parse, PeError, "not a regular file of a PE image's size", too_small, "PE")


def _parse(data: mmap.mmap) -> PeInfo:
    if data[:2] != b"MZ":
        raise PeError("not a PE image (no MZ header)")
    pe_offset, = struct.unpack_from("<I", data, 0x3C)
    if data[pe_offset:pe_offset + 4] != b"PE\0\0":
        raise PeError("not a PE image (no PE signature)")
    machine, sections, _time, _symbols, _count, optional_size, _flags = struct.unpack_from("<HHIIIHH", data, pe_offset + 4)
    optional = pe_offset + 24
    magic, = struct.unpack_from("<H", data, optional)
    bits = {0x10B: 32, 0x20B: 64}.get(magic)
    if bits is None:
        raise PeError(f"unknown optional header (magic 0x{magic:x})")
    directories = optional + (96 if bits == 32 else 112)
    count, = struct.unpack_from("<I", data, directories - 4)
    arch = MACHINES.get(machine, f"machine 0x{machine:x}")
    table = [struct.unpack_from("<IIII", data, optional + optional_size + index * 40 + 8)
             for index in range(min(sections, MAX_SECTIONS))]  # (virtual size, RVA, raw size, raw offset)
    imports = _imports(data, directories, table) if count > IMPORT_DIRECTORY else ()
    if count <= RESOURCE_DIRECTORY:
        return PeInfo(arch, bits, None, imports)
    resource_rva, _size = struct.unpack_from("<II", data, directories + RESOURCE_DIRECTORY * 8)
    base = _offset(resource_rva, table) if resource_rva else None
    version = _fixed_file_version(data, base, resource_rva, table) if base is not None else None
    return PeInfo(arch, bits, version, imports)


def _imports(data: mmap.mmap, directories: int, table: list[tuple[int, int, int, int]]) -> tuple[str, ...]:
    """The names of the import descriptors (20 bytes each, up to the one that is all zeros)."""
    rva, _size = struct.unpack_from("<II", data, directories + IMPORT_DIRECTORY * 8)
    at = _offset(rva, table) if rva else None
    names: list[str] = []
    while at is not None and len(names) < MAX_IMPORTS:
        descriptor = struct.unpack_from("<IIIII", data, at)
        if not any(descriptor):
            break
        start = _offset(descriptor[3], table)
        if start is not None:
            end = data.find(b"\0", start, start + MAX_NAME)
            names.append(bytes(data[start:end if end >= 0 else start]).decode("ascii", "replace"))
        at += 20
    return tuple(name for name in names if name)


def _offset(rva: int, table: list[tuple[int, int, int, int]]) -> int | None:
    for virtual_size, address, raw_size, raw_offset in table:
        if address <= rva < address + max(virtual_size, raw_size):
            return raw_offset + rva - address
    return None


def _first_entry(data: mmap.mmap, directory: int, wanted_id: int | None = None) -> int | None:
    """The offset field of the entry WANTED_ID (the first one when None) of the resource directory at DIRECTORY."""
    named, numbered = struct.unpack_from("<HH", data, directory + 12)
    for index in range(min(named + numbered, 4096)):
        name, target = struct.unpack_from("<II", data, directory + 16 + index * 8)
        if wanted_id is None or (not name & 0x80000000 and name == wanted_id):
            return target
    return None


def _fixed_file_version(data: mmap.mmap, base: int, resource_rva: int,
                        table: list[tuple[int, int, int, int]]) -> str | None:
    """The FileVersion of the first RT_VERSION resource: type -> name -> language -> data."""
    target = _first_entry(data, base, RT_VERSION)
    for _level in range(2):  # the name's directory, then the language's
        if target is None or not target & 0x80000000:
            return None
        target = _first_entry(data, base + (target & 0x7FFFFFFF))
    if target is None or target & 0x80000000:
        return None
    data_rva, size, _codepage, _reserved = struct.unpack_from("<IIII", data, base + target)
    start = _offset(data_rva, table)
    if start is None:
        return None
    signature = struct.pack("<I", FIXED_FILE_INFO_SIGNATURE)
    at = data.find(signature, start, start + min(size, 4096))
    if at < 0:
        return None
    _signature, _struct_version, most, least = struct.unpack_from("<IIII", data, at)
    return f"{most >> 16}.{most & 0xFFFF}.{least >> 16}.{least & 0xFFFF}"
