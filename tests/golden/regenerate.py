#!/usr/bin/env python3
"""Show what diskprobe emits today for golden cases, as a diff against their expected.out.

    python tests/golden/regenerate.py                 # diff for every case; exit 1 if any differ
    python tests/golden/regenerate.py CASE...         # only these
    python tests/golden/regenerate.py --write CASE... # then write expected.out for these

A CASE is a case id, `smart-json/<name>` or `smart-text/<name>`, or a bare name (every tree's
case of that name). Cases of both trees run the same way (tests/smart_golden.py).

expected.out is a reviewed file, not a snapshot: read the diff against the response before
writing, and write only the cases you reviewed (there is no --write for all of them). Where the
plugin is wrong, fix the plugin, or keep the correct line and list it in KNOWN_PLUGIN_BUGS in
tests/test_smart_golden.py, rather than writing the wrong value here.
"""

from __future__ import annotations

import argparse
import difflib
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from smart_golden import case_id, find_cases, golden_cases, run_golden_case


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", help="case ids or names (default: all)")
    parser.add_argument("--write", action="store_true", help="write expected.out (named cases)")
    args = parser.parse_args(argv)
    if args.write and not args.cases:
        parser.error("--write needs the names of the cases you reviewed")
    try:
        cases = find_cases(args.cases) if args.cases else golden_cases()
    except KeyError as error:
        parser.error(str(error.args[0]))
    changed = 0
    for case in cases:
        with tempfile.TemporaryDirectory() as workdir:
            text = run_golden_case(case, Path(workdir)).text
        expected = case / "expected.out"
        old = expected.read_text(encoding="utf-8") if expected.exists() else ""
        if old == text:
            continue
        changed += 1
        sys.stdout.writelines(
            difflib.unified_diff(
                old.splitlines(keepends=True),
                text.splitlines(keepends=True),
                f"{case_id(case)}/expected.out",
                f"{case_id(case)} (diskprobe now)",
            )
        )
        if args.write:
            expected.write_text(text, encoding="utf-8")
            print(f"wrote {expected}", file=sys.stderr)
    print(f"{changed} of {len(cases)} case(s) differ", file=sys.stderr)
    return 1 if changed and not args.write else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
