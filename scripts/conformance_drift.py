#!/usr/bin/env python3
"""Drift check: the project's copy of the conformance suite against the shared suite.

Usage: python3 scripts/conformance_drift.py [--shared DIR] [--copy DIR]

For every area directory of the shared suite, each case must exist in the project's copy
(testdata/conformance/<area>/) with identical bytes, unless it is listed in
testdata/conformance/CORRECTIONS (a deliberate correction with its evidence); a listed case must
still differ (otherwise the entry is stale). Cases the project holds beyond the shared suite in a
shared area are reported too. Exit status 0 when there is no drift, 1 otherwise, 2 when the shared
suite is absent (the check cannot run; CI says so and goes on).
"""
import argparse
import filecmp
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_corrections(path):
    out = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            case, _, why = line.partition(" ")
            if not why.strip():
                sys.exit(f"{path}:{n}: {case}: a correction needs its evidence after the case name")
            out[case] = why.strip()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared", "conformance"))
    ap.add_argument("--copy", default=os.path.join(ROOT, "testdata", "conformance"))
    args = ap.parse_args()
    if not os.path.isdir(args.shared):
        print(f"conformance drift check skipped: no shared suite at {os.path.normpath(args.shared)}")
        return 2
    corrections = read_corrections(os.path.join(args.copy, "CORRECTIONS"))
    problems = []
    checked = 0
    areas = sorted(d for d in os.listdir(args.shared) if os.path.isdir(os.path.join(args.shared, d)))
    for area in areas:
        shared_dir = os.path.join(args.shared, area)
        copy_dir = os.path.join(args.copy, area)
        shared_cases = sorted(f for f in os.listdir(shared_dir) if f.endswith(".json"))
        copy_cases = set(os.listdir(copy_dir)) if os.path.isdir(copy_dir) else set()
        for case in shared_cases:
            key = f"{area}/{case}"
            checked += 1
            if case not in copy_cases:
                problems.append(f"missing: {key} is in the shared suite but not in the project's copy")
                continue
            same = filecmp.cmp(os.path.join(shared_dir, case), os.path.join(copy_dir, case), shallow=False)
            if key in corrections and same:
                problems.append(f"stale correction: {key} is listed in CORRECTIONS but equals the shared case")
            elif key not in corrections and not same:
                problems.append(f"drift: {key} differs from the shared case (copy it, or list it in CORRECTIONS with evidence)")
        for case in sorted(copy_cases - set(shared_cases)):
            if case.endswith(".json"):
                problems.append(f"extra: {area}/{case} is not in the shared suite")
    for key in sorted(corrections):
        area, _, case = key.partition("/")
        if not os.path.exists(os.path.join(args.shared, area, case)):
            problems.append(f"stale correction: {key} is not in the shared suite")
    for p in problems:
        print(p)
    print(f"conformance drift: {checked} shared cases in {len(areas)} areas, "
          f"{len(corrections)} listed corrections, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
