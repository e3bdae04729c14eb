#!/usr/bin/python3
"""audit_validate.py SCHEMA FILE... — validates every line of each audit log against docs/audit.schema.json.
Prints one line per invalid line ("FILE:LINE: error; line") and a last line "N lines, M invalid".
Exits 1 when any line is invalid (or is not JSON), 0 otherwise. Needs Debian's python3-jsonschema."""
import json
import sys

import jsonschema


def main():
    schema = json.load(open(sys.argv[1], encoding="utf-8"))
    v = jsonschema.Draft202012Validator(schema)
    total = bad = 0
    for path in sys.argv[2:]:
        with open(path, encoding="utf-8", errors="strict") as f:
            for no, line in enumerate(f, 1):
                total += 1
                try:
                    obj = json.loads(line)
                    errs = sorted(v.iter_errors(obj), key=lambda e: list(e.path))
                    msg = "; ".join(("%s: %s" % ("/".join(map(str, e.path)) or "(line)", e.message))[:200]
                                    for e in errs[:3])
                except ValueError as e:
                    msg = "not JSON: %s" % e
                if msg:
                    bad += 1
                    print("%s:%d: %s; line: %s" % (path, no, msg, line.rstrip("\n")[:300]))
    print("%d lines, %d invalid" % (total, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
