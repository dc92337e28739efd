#!/usr/bin/env python3
"""Compares the machine code of kpack's FlashInfer cubins with that of the
same template instantiations in flashinfer_check (built by nvcc), at build
time, without cuobjdump.

    flashinfer_sass_compare.py NV_FATBIN UNITS_DIR

NV_FATBIN is flashinfer_check's .nv_fatbin section (objcopy -O binary
--only-section=.nv_fatbin); UNITS_DIR is kpack's work-dir/units, whose *.bin
are the cubins kpack embedded.  For each kernel of each kpack cubin (its
.text.<mangled name> section) the program must hold a cubin with the same
section, byte for byte: then the "direct" launches of flashinfer_check run
exactly kpack's code, and the GPU check's bit-for-bit comparison tests the
launch path alone.  Relies on the fatbin images being uncompressed ELF (nvcc's
default); prints one line per mismatch and a summary, exits 1 on any.
"""
import glob
import os
import struct
import sys


def elf_images(blob):
    """Every ELF64 image inside `blob` (a fatbin section), by its magic."""
    i = 0
    while True:
        i = blob.find(b"\x7fELF\x02\x01", i)
        if i < 0:
            return
        shoff, = struct.unpack_from("<Q", blob, i + 0x28)
        shentsize, shnum = struct.unpack_from("<HH", blob, i + 0x3A)
        end = shoff + shentsize * shnum
        yield blob[i:i + end]
        i += max(end, 4)


def text_sections(elf):
    """{mangled kernel name: .text bytes} of one cubin."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    sections = [struct.unpack_from("<IIQQQQ", elf, shoff + k * shentsize) for k in range(shnum)]
    strings = sections[shstrndx][4]
    out = {}
    for name, _type, _flags, _addr, offset, size in sections:
        n = elf[strings + name:elf.index(b"\0", strings + name)].decode()
        if n.startswith(".text."):
            out[n[len(".text."):]] = elf[offset:offset + size]
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    program = {}
    with open(sys.argv[1], "rb") as f:
        for image in elf_images(f.read()):
            for name, text in text_sections(image).items():
                program.setdefault(name, []).append(text)
    if not program:
        print("flashinfer_sass_compare: no uncompressed cubin in %s" % sys.argv[1])
        return 1
    same = bad = 0
    units = sorted(glob.glob(os.path.join(sys.argv[2], "*.bin")))
    for path in units:
        with open(path, "rb") as f:
            cubin = f.read()
        if not cubin.startswith(b"\x7fELF"):
            print("flashinfer_sass_compare: %s is not a cubin" % path)
            bad += 1
            continue
        for name, text in text_sections(cubin).items():
            if name not in program:
                print("flashinfer_sass_compare: %s: %s is not in flashinfer_check" % (os.path.basename(path), name))
                bad += 1
            elif text not in program[name]:
                print("flashinfer_sass_compare: %s: %s differs (%d bytes; the program's: %s)"
                      % (os.path.basename(path), name, len(text), [len(t) for t in program[name]]))
                bad += 1
            else:
                same += 1
    print("flashinfer_sass_compare: %d kernel images of %d kpack cubins identical to flashinfer_check's, %d not"
          % (same, len(units), bad))
    return 0 if bad == 0 and same > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
