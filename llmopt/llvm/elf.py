"""Section sizes of an ELF object (for the `objsize` metric) without extra dependencies."""

from __future__ import annotations

import struct


def section_sizes(data: bytes) -> list[tuple[str, int]]:
    """(name, size) of every section of a 64- or 32-bit ELF object."""
    if data[:4] != b"\x7fELF":
        raise ValueError("not an ELF object")
    is64, endian = data[4] == 2, "<" if data[5] == 1 else ">"
    if is64:
        (shoff,) = struct.unpack_from(endian + "Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(endian + "HHH", data, 0x3A)
    else:
        (shoff,) = struct.unpack_from(endian + "I", data, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(endian + "HHH", data, 0x2E)

    def header(i: int) -> tuple[int, int, int]:
        base = shoff + i * shentsize
        (name,) = struct.unpack_from(endian + "I", data, base)
        fmt, at = (endian + "QQ", 0x18) if is64 else (endian + "II", 0x10)
        offset, size = struct.unpack_from(fmt, data, base + at)
        return name, offset, size

    _, strtab, _ = header(shstrndx)
    out = []
    for i in range(shnum):
        name_off, _, size = header(i)
        end = data.index(b"\0", strtab + name_off)
        out.append((data[strtab + name_off : end].decode(), size))
    return out


def text_and_data_bytes(data: bytes, sections: tuple[str, ...] = (".text", ".data")) -> int:
    """Sum of the sizes of .text and .data (and their .text.* / .data.* variants)."""
    return sum(size for name, size in section_sizes(data)
               if any(name == s or name.startswith(s + ".") for s in sections))
