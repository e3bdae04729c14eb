#!/usr/bin/env python3
"""audit_q.py FILE [KEY=VALUE | KEY~PREFIX | KEY@V1,V2]... — prints how many audit lines match all filters.
Exits 2 if any line of FILE is not a JSON object (every line must parse)."""
import json
import sys


def main():
    path, filters = sys.argv[1], sys.argv[2:]
    n = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                o = json.loads(line)
            except ValueError:
                print("bad line: %r" % line, file=sys.stderr)
                return 2
            if not isinstance(o, dict):
                return 2
            ok = True
            for flt in filters:
                if "@" in flt:
                    k, v = flt.split("@", 1)
                    ok = ok and str(o.get(k)) in v.split(",")
                elif "~" in flt:
                    k, v = flt.split("~", 1)
                    ok = ok and str(o.get(k)).startswith(v)
                else:
                    k, v = flt.split("=", 1)
                    ok = ok and str(o.get(k)) == v
            n += ok
    print(n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
