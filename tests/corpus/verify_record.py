#!/usr/bin/env python3
"""Checks an unpacked wheel (or the members of it that were extracted)
against the sha256 in its RECORD.

    verify_record.py DIR [--expect PATTERN...]

Every file under DIR but the .complete marker must be listed in the single
DIR/*.dist-info/RECORD with the hash of its bytes (RECORD itself, which has
none, excepted).  With --expect (fetch.sh, right after unzipping), every
RECORD entry matching one of the unzip member patterns must also be there:
`*` for a wheel unpacked whole.  Without it (run.sh) only the files present
are checked.  Exits non-zero naming the first file that fails.
"""
import base64
import csv
import fnmatch
import glob
import hashlib
import os
import sys


def main(argv):
    if not argv or argv[0].startswith("-"):
        sys.exit(__doc__)
    root, expect = argv[0], None
    if len(argv) > 1:
        if argv[1] != "--expect" or len(argv) < 3:
            sys.exit(__doc__)
        expect = argv[2:]
    records = glob.glob(os.path.join(glob.escape(root), "*.dist-info", "RECORD"))
    if len(records) != 1:
        sys.exit("no single *.dist-info/RECORD in %s" % root)
    record_path = os.path.relpath(records[0], root).replace(os.sep, "/")
    digests = {}
    with open(records[0], newline="") as f:
        for row in csv.reader(f):
            if row:
                digests[row[0]] = row[1] if len(row) > 1 else ""
    checked = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            full = os.path.join(dirpath, name)
            path = os.path.relpath(full, root).replace(os.sep, "/")
            if path == ".complete" or path == record_path:
                continue
            if os.path.islink(full):
                sys.exit("%s: a link, not a file of the wheel" % full)
            digest = digests.get(path)
            if not digest:
                sys.exit("%s: not in the wheel's RECORD with a hash (%s)" % (full, record_path))
            algorithm, _, expected = digest.partition("=")
            with open(full, "rb") as g:
                got = base64.urlsafe_b64encode(hashlib.new(algorithm, g.read()).digest()).rstrip(b"=").decode()
            if got != expected:
                sys.exit("%s differs from the wheel (RECORD %s, file %s=%s)" % (full, digest, algorithm, got))
            checked += 1
    if expect is not None:
        for path in digests:
            if any(fnmatch.fnmatchcase(path, p) for p in expect) and not os.path.isfile(os.path.join(root, path)):
                sys.exit("%s: in the wheel's RECORD and meant to be extracted, but missing" % os.path.join(root, path))
    if checked == 0:
        sys.exit("no file of the wheel in %s" % root)
    print("%d files as in the wheel" % checked)


if __name__ == "__main__":
    main(sys.argv[1:])
