"""Read what the dynamic loader reads from a shared library's ELF headers.

Enough to tell a library for another architecture, a truncated or non-ELF
file, and a library's soname, DT_NEEDED and DT_RUNPATH, without loading it.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
from collections.abc import Callable
from dataclasses import field
from typing import TypeVar

from cudnn_doctor.operating_system import CURRENT
from cudnn_doctor.records import record

MACHINES = {3: "i386", 20: "ppc", 21: "ppc64le", 40: "arm", 62: "x86_64", 183: "aarch64", 243: "riscv64"}
HOST_ARCH_ALIASES = {"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64le", "i686": "i386"}

PT_LOAD, PT_DYNAMIC = 1, 2
MAX_DYNAMIC_ENTRIES = 65536
MAX_STRING = 4096  # a soname or a RUNPATH; longer is not a library the loader would use
DT_NULL, DT_NEEDED, DT_STRTAB, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 5, 14, 15, 29
DT_VERNEED, DT_VERNEEDNUM = 0x6FFFFFFE, 0x6FFFFFFF
DT_VERDEF, DT_VERDEFNUM = 0x6FFFFFFC, 0x6FFFFFFD
MAX_VERSION_NEEDS = 4096  # (library, version) pairs: a real library needs tens


T = TypeVar("T")


class ElfError(Exception):
    """The file is not a usable ELF shared library."""


@record
class ElfInfo:
    """What an ELF file's headers say: machine, class, soname, needed libraries."""

    arch: str
    bits: int
    soname: str | None = None
    needed: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    rpath: tuple[str, ...] = ()
    extra: dict[str, str] = field(default_factory=dict)
    version_needs: tuple[tuple[str, str], ...] = ()  # (library, symbol version) of DT_VERNEED: ("libc.so.6", "GLIBC_2.34")
    version_defs: tuple[str, ...] = ()  # the symbol versions it defines (DT_VERDEF): libstdc++'s GLIBCXX_3.4.30, ...


def uname() -> tuple[str, str, str]:
    """(system, node, machine) of this machine (operating_system.py: os.uname(), or Windows' own variables)."""
    return CURRENT.uname()


def host_arch() -> str:
    machine = uname()[2].lower()
    return HOST_ARCH_ALIASES.get(machine, machine)


def read_elf(path: str) -> ElfInfo:
    """Parse PATH's ELF header and dynamic section; raise ElfError if it is not one."""
    return _read_mapped(path, _parse)


def _read_mapped(path: str, read: Callable[[mmap.mmap], T]) -> T:
    """READ applied to PATH mapped; ElfError for a file that is not a regular, non-empty, well-formed one."""

    def empty(info: os.stat_result) -> str | None:
        return "the file is empty" if info.st_size == 0 else None

    return read_mapped(path, read, ElfError, "not a regular file (a FIFO, device or folder)", empty, "ELF")


def read_mapped(path: str, read: Callable[[mmap.mmap], T], error: type[Exception], not_regular: str,
                too_small: Callable[[os.stat_result], str | None], kind: str) -> T:
    """READ applied to PATH mapped (not read: a library can be gigabytes, and only its headers are needed),
    opened without waiting on a FIFO. ERROR (with NOT_REGULAR, TOO_SMALL's text, "cannot read it: ...", or
    "malformed KIND headers (...)") for a file READ cannot take: for ELF libraries here, PE images in probes/pe.py."""
    try:
        descriptor = os.open(path, os.O_RDONLY | CURRENT.open_flags)  # a FIFO must not make us wait
    except OSError as failure:
        raise error(f"cannot read it: {failure.strerror or failure}") from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise error(not_regular)
        small = too_small(info)
        if small:
            raise error(small)
        data = mmap.mmap(descriptor, 0, access=mmap.ACCESS_READ)
    except OSError as failure:
        raise error(f"cannot read it: {failure.strerror or failure}") from None
    finally:
        os.close(descriptor)
    with data:
        try:
            return read(data)
        except (struct.error, ValueError, IndexError) as failure:  # a header that points past what it holds
            raise error(f"malformed {kind} headers ({failure})") from None


@record
class ElfHeader:
    """What the ELF header and program headers say: enough to judge a file without loading it."""

    arch: str
    bits: int
    endian: str
    loads: tuple[tuple[int, int, int], ...]  # PT_LOAD segments: (vaddr, offset, filesz)
    dynamic: tuple[int, int] | None  # PT_DYNAMIC: (offset, size)


def parse_header(data: bytes | mmap.mmap, size: int | None = None) -> ElfHeader:
    """The ELF header of DATA, the start of a file of SIZE bytes (the whole file when SIZE is None);
    ElfError when it is not ELF, malformed, or truncated (a segment ends past SIZE). Program headers
    that lie beyond DATA, in a file bigger than DATA, are not read (an archive member's first bytes)."""
    size = len(data) if size is None else size
    if len(data) < 64 or data[:4] != b"\x7fELF":
        raise ElfError("not an ELF file (invalid ELF header)")
    bits = {1: 32, 2: 64}.get(data[4])
    endian = {1: "<", 2: ">"}.get(data[5])
    if bits is None or endian is None:
        raise ElfError("invalid ELF class or byte order")
    machine_code = struct.unpack_from(endian + "H", data, 18)[0]
    arch = MACHINES.get(machine_code, f"machine {machine_code}")
    if bits == 64:
        phoff, = struct.unpack_from(endian + "Q", data, 32)
        phentsize, phnum = struct.unpack_from(endian + "HH", data, 54)
        ph_format = endian + "IIQQQQQQ"
    else:
        phoff, = struct.unpack_from(endian + "I", data, 28)
        phentsize, phnum = struct.unpack_from(endian + "HH", data, 42)
        ph_format = endian + "IIIIIIII"
    if phnum and phentsize < struct.calcsize(ph_format):
        raise ElfError(f"malformed ELF headers (program header entries of {phentsize} bytes)")
    if phoff + phentsize * phnum > size:
        raise ElfError("truncated (program headers past the end of the file)")
    loads: list[tuple[int, int, int]] = []
    dynamic: tuple[int, int] | None = None
    for index in range(phnum):
        at = phoff + index * phentsize
        if at + phentsize > len(data):
            break  # beyond the bytes we were given
        fields = struct.unpack_from(ph_format, data, at)
        if bits == 64:
            p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = fields[:6]
        else:
            p_type, p_offset, p_vaddr, _paddr, p_filesz = fields[:5]
        if p_type == PT_LOAD:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == PT_DYNAMIC:
            dynamic = (p_offset, p_filesz)
    for _vaddr, offset, length in loads:
        if offset + length > size:
            raise ElfError(f"truncated ({size} bytes, a segment ends at byte {offset + length})")
    return ElfHeader(arch, bits, endian, tuple(loads), dynamic)


def _parse(data: mmap.mmap) -> ElfInfo:
    header = parse_header(data)
    arch, bits, endian, dynamic = header.arch, header.bits, header.endian, header.dynamic
    loads = list(header.loads)
    dyn_format = endian + ("qQ" if bits == 64 else "iI")
    if dynamic is None:
        return ElfInfo(arch=arch, bits=bits)
    entries: list[tuple[int, int]] = []
    entry_size = struct.calcsize(dyn_format)
    offset, size = dynamic
    # a real dynamic section has tens of entries; a crafted one may claim the whole file
    end = min(offset + size, len(data) - entry_size + 1, offset + MAX_DYNAMIC_ENTRIES * entry_size)
    for position in range(offset, end, entry_size):
        tag, value = struct.unpack_from(dyn_format, data, position)
        if tag == DT_NULL:
            break
        entries.append((tag, value))
    strtab_vaddr = next((value for tag, value in entries if tag == DT_STRTAB), None)
    strtab = _vaddr_to_offset(strtab_vaddr, loads) if strtab_vaddr is not None else None

    def string(at: int) -> str:
        if strtab is None:
            return ""
        start = strtab + at
        stop = data.find(b"\0", start, start + MAX_STRING)
        # sonames and RUNPATH folders are bytes to the loader: keep them (surrogateescape)
        return os.fsdecode(bytes(data[start:stop if stop >= 0 else min(len(data), start + MAX_STRING)]))

    def strings(wanted: int) -> list[str]:
        return [string(value) for tag, value in entries if tag == wanted]

    soname = next(iter(strings(DT_SONAME)), None)
    needs: list[tuple[str, str]] = []
    verneed = _vaddr_to_offset(next((v for t, v in entries if t == DT_VERNEED), None) or 0, loads) \
        if any(t == DT_VERNEED for t, _ in entries) else None
    count = next((v for t, v in entries if t == DT_VERNEEDNUM), 0)
    try:  # Elf_Verneed (vn_version, vn_cnt, vn_file, vn_aux, vn_next), each with vn_cnt Elf_Vernaux entries
        at, files = verneed, 0
        while at is not None and files < min(count, MAX_VERSION_NEEDS) and len(needs) < MAX_VERSION_NEEDS:
            _version, cnt, vn_file, vn_aux, vn_next = struct.unpack_from(endian + "HHIII", data, at)
            aux = at + vn_aux
            for _ in range(min(cnt, MAX_VERSION_NEEDS)):
                _hash, _flags, _other, name, vna_next = struct.unpack_from(endian + "IHHII", data, aux)
                needs.append((string(vn_file), string(name)))
                if not vna_next:
                    break
                aux += vna_next
            files += 1
            at = at + vn_next if vn_next else None
    except struct.error:  # cut short or crafted: what was read stands
        pass
    defs: list[str] = []
    verdef = _vaddr_to_offset(next((v for t, v in entries if t == DT_VERDEF), None) or 0, loads) \
        if any(t == DT_VERDEF for t, _ in entries) else None
    try:  # Elf_Verdef (vd_version, vd_flags, vd_ndx, vd_cnt, vd_hash, vd_aux, vd_next); its first Elf_Verdaux names it
        at = verdef
        while at is not None and len(defs) < min(next((v for t, v in entries if t == DT_VERDEFNUM), 0),
                                                 MAX_VERSION_NEEDS):
            _version, flags, _index, _cnt, _hash, vd_aux, vd_next = struct.unpack_from(endian + "HHHHIII", data, at)
            name = struct.unpack_from(endian + "I", data, at + vd_aux)[0]
            defs.append(string(name))
            at = at + vd_next if vd_next else None
    except struct.error:  # cut short or crafted: what was read stands
        pass
    return ElfInfo(
        version_defs=tuple(defs),
        arch=arch,
        bits=bits,
        soname=soname,
        needed=tuple(strings(DT_NEEDED)),
        runpath=tuple(part for item in strings(DT_RUNPATH) for part in item.split(":") if part),
        rpath=tuple(part for item in strings(DT_RPATH) for part in item.split(":") if part),
        version_needs=tuple(needs[:MAX_VERSION_NEEDS]),
    )


def _vaddr_to_offset(vaddr: int, loads: list[tuple[int, int, int]]) -> int | None:
    for start, offset, size in loads:
        if start <= vaddr < start + max(size, 1):
            return offset + (vaddr - start)
    return vaddr if loads == [] else None


SHT_DYNSYM = 11
MAX_SYMBOLS = 1 << 20


def read_exported_u32(path: str, names: tuple[str, ...]) -> dict[str, int]:
    """The 32-bit values of the exported data symbols NAMES of the library at PATH, read from its dynamic
    symbol table without loading it (cuDNN 9's sub-libraries export their release this way:
    `cudnn_ops_infer_version` = major << 16 | minor << 8 | patch). Names not found are left out; ElfError
    when the file is not a readable, complete ELF library."""
    return _read_mapped(path, lambda data: _exported_u32(data, set(names)))


def read_elf_and_exported_u32(path: str, names: tuple[str, ...]) -> tuple[ElfInfo, dict[str, int]]:
    """read_elf(PATH) and read_exported_u32(PATH, NAMES) from one mapping of the file (a cuDNN sub-library is read
    for both: opened and mapped twice before); ElfError as either raises it, read_elf's first."""
    return _read_mapped(path, lambda data: (_parse(data), _exported_u32(data, set(names))))


def _exported_u32(data: mmap.mmap, wanted: set[str]) -> dict[str, int]:
    header = parse_header(data)
    if header.bits != 64:
        return {}
    endian = header.endian
    shoff, = struct.unpack_from(endian + "Q", data, 40)
    shentsize, shnum = struct.unpack_from(endian + "HH", data, 58)
    if shoff == 0 or shnum == 0:  # no section headers at all (stripped of them): the loader needs none; none read
        return {}
    if shoff + shentsize * shnum > len(data):
        raise ElfError("truncated (section headers past the end of the file)")
    sections = [struct.unpack_from(endian + "IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    found: dict[str, int] = {}
    for index, (_name, kind, _flags, _addr, offset, size, link, _info, _align, entsize) in enumerate(sections):
        if kind != SHT_DYNSYM or entsize < 24 or link >= len(sections):
            continue
        table = _SymbolTable(data, endian, offset, min(offset + size, len(data)), entsize, sections[link][4],
                             sections[link][5])
        hashed = next((section for section in sections if section[1] == SHT_GNU_HASH and section[6] == index), None)
        positions = table.looked_up(hashed, wanted) if hashed is not None else None
        for name, position in (table.scanned(wanted) if positions is None else positions):
            st_value, = struct.unpack_from(endian + "Q", data, position + 8)
            at = _vaddr_to_offset(st_value, list(header.loads))
            if at is not None and at + 4 <= len(data):
                found[name] = struct.unpack_from(endian + "I", data, at)[0]
    return found


SHT_GNU_HASH = 0x6FFFFFF6


class _SymbolTable:
    """A dynamic symbol table (.dynsym) and its string table, in a mapped ELF file: END is where its entries stop.
    (A plain class: a dataclass costs half a millisecond of every start.)"""

    __slots__ = ("data", "end", "endian", "entsize", "start", "strtab_offset", "strtab_size")

    def __init__(self, data: mmap.mmap, endian: str, start: int, end: int, entsize: int, strtab_offset: int,
                 strtab_size: int) -> None:
        self.data, self.endian, self.start, self.end, self.entsize = data, endian, start, end, entsize
        self.strtab_offset, self.strtab_size = strtab_offset, strtab_size

    def name(self, position: int) -> str | None:
        """The name of the symbol at POSITION, None for one whose size cannot hold a 32-bit value."""
        st_name, = struct.unpack_from(self.endian + "I", self.data, position)
        st_size, = struct.unpack_from(self.endian + "Q", self.data, position + 16)
        if st_name >= self.strtab_size or st_size < 4:
            return None
        start = self.strtab_offset + st_name
        return bytes(self.data[start:self.data.find(b"\0", start, start + MAX_STRING)]).decode("ascii", "replace")

    def scanned(self, wanted: set[str]) -> list[tuple[str, int]]:
        """Each of WANTED found by reading every entry (a library without a GNU hash table)."""
        found = []
        for position in range(self.start, self.end, self.entsize)[:MAX_SYMBOLS]:
            name = self.name(position) if position + 24 <= self.end else None
            if name in wanted:
                found.append((name, position))
        return found

    def looked_up(self, section: tuple[int, ...], wanted: set[str]) -> list[tuple[str, int]] | None:
        """Each of WANTED found through the GNU hash table SECTION, as ld.so finds a symbol (a bucket by the name's
        hash, then its chain): a handful of entries read instead of cuDNN's thousands. None where the table is not
        one that can be trusted (the caller then reads every entry)."""
        offset, size = section[4], section[5]
        data, endian = self.data, self.endian
        if size < 16 or offset + size > len(data):
            return None
        buckets_count, symbol_offset, bloom_size, _shift = struct.unpack_from(endian + "IIII", data, offset)
        buckets_at = offset + 16 + 8 * bloom_size
        chain_at = buckets_at + 4 * buckets_count
        symbols = (self.end - self.start) // self.entsize
        if buckets_count == 0 or chain_at > offset + size or symbol_offset > symbols:
            return None
        found = []
        for name in wanted:
            digest = _gnu_hash(name.encode("ascii", "replace"))
            index, = struct.unpack_from(endian + "I", data, buckets_at + 4 * (digest % buckets_count))
            if index == 0:  # an empty bucket: no such symbol
                continue
            if index < symbol_offset:
                return None
            while index < symbols:
                link = chain_at + 4 * (index - symbol_offset)
                if link + 4 > offset + size:
                    return None
                value, = struct.unpack_from(endian + "I", data, link)
                position = self.start + index * self.entsize
                if value | 1 == digest | 1 and self.name(position) == name:
                    found.append((name, position))
                    break
                if value & 1:  # the chain's last entry
                    break
                index += 1
        return found


def _gnu_hash(name: bytes) -> int:
    """The GNU hash of a symbol name (dl_new_hash: h = h * 33 + c from 5381, 32 bits)."""
    digest = 5381
    for byte in name:
        digest = (digest * 33 + byte) & 0xFFFFFFFF
    return digest


SHT_PROGBITS = 1
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 0x1, 0x2, 0x4


def strings_held(path: str, names: tuple[str, ...]) -> set[str]:
    """Which NAMES the ELF library at PATH holds as whole strings (NUL-ended, not the tail of a longer name) in its
    read-only data (.rodata): where a library keeps the names it looks up (NCCL's variables: NCCL_PARAM's
    "NCCL_" "P2P_LEVEL" literals). Only those sections are searched (a few MiB of a library of hundreds, most of it
    GPU code), mapped, never read whole. ElfError when the file is not a readable, complete 64-bit ELF library."""
    return _read_mapped(path, lambda data: _strings_held(data, names))


def _strings_held(data: mmap.mmap, names: tuple[str, ...]) -> set[str]:
    header = parse_header(data)
    if header.bits != 64:
        raise ElfError("not a 64-bit ELF library")
    endian = header.endian
    shoff, = struct.unpack_from(endian + "Q", data, 40)
    shentsize, shnum = struct.unpack_from(endian + "HH", data, 58)
    if shoff == 0 or shnum == 0:  # stripped of them: the loader needs none, but its read-only data is not found so
        raise ElfError("no section headers (stripped of them): its read-only data cannot be found")
    if shoff + shentsize * shnum > len(data):
        raise ElfError("truncated (section headers past the end of the file)")
    shstrndx, = struct.unpack_from(endian + "H", data, 62)
    headers = [struct.unpack_from(endian + "IIQQQQ", data, shoff + index * shentsize) for index in range(shnum)]
    if shstrndx >= len(headers):
        raise ElfError("malformed ELF headers (no section names)")
    names_at = headers[shstrndx][4]
    ranges = []
    for name_offset, kind, flags, _addr, offset, size in headers:
        section = bytes(data[names_at + name_offset:names_at + name_offset + 32]).split(b"\0", 1)[0]
        if kind == SHT_PROGBITS and flags & SHF_ALLOC and not flags & (SHF_WRITE | SHF_EXECINSTR) and \
                (section == b".rodata" or section.startswith(b".rodata.")):  # not the GPU code (.nv_fatbin) beside it
            ranges.append((offset, min(offset + size, len(data))))
    found: set[str] = set()
    for name in names:
        needle = name.encode("ascii", "replace") + b"\0"
        for start, end in ranges:
            at = data.find(needle, start, end)
            while at != -1 and at > start and (chr(data[at - 1]).isalnum() or data[at - 1] == ord("_")):
                at = data.find(needle, at + 1, end)  # the tail of a longer name
            if at != -1:
                found.add(name)
                break
    return found
