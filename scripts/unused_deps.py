#!/usr/bin/env python3
"""Unused-dependency check for the workspace (and fuzz/).

Usage: python3 scripts/unused_deps.py

For every member's Cargo.toml, each entry of [dependencies] must be named in the crate's library
or binary sources (src/, build.rs) -- in any of its targets for a crate with `publish = false` --
and each entry of [dev-dependencies] in any of its sources
(src/, tests/, benches/, examples/). A dependency counts as named when its Rust identifier (the
key with '-' as '_') appears as a path (`name::`), in a `use`, or as `extern crate`. Exit status 1
lists each unused one.
"""
import os
import re
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rust_files(crate_dir, subdirs):
    for sub in subdirs:
        path = os.path.join(crate_dir, sub)
        if os.path.isfile(path) and path.endswith(".rs"):
            yield path
        for base, dirs, files in os.walk(path):
            dirs[:] = [d for d in dirs if d != "target"]
            for f in files:
                if f.endswith(".rs"):
                    yield os.path.join(base, f)


def text_of(files):
    parts = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            parts.append(fh.read())
    return "\n".join(parts)


def used(ident, text):
    return re.search(r"(?<![A-Za-z0-9_])" + re.escape(ident) + r"\s*::", text) or \
        re.search(r"\buse\s+" + re.escape(ident) + r"\b", text) or \
        re.search(r"\bextern\s+crate\s+" + re.escape(ident) + r"\b", text)


def check(crate_dir):
    with open(os.path.join(crate_dir, "Cargo.toml"), "rb") as f:
        manifest = tomllib.load(f)
    problems = []
    lib_text = text_of(rust_files(crate_dir, ["src", "build.rs"]))
    # Every target's sources: the conventional folders plus the paths the manifest names.
    extra = [t["path"] for kind in ("bin", "example", "test", "bench") for t in manifest.get(kind, []) if "path" in t]
    all_text = lib_text + "\n" + text_of(rust_files(crate_dir, ["tests", "benches", "examples"] + extra))
    # Crates that are never published (benches, examples, fuzz targets, generators) use their
    # ordinary dependencies from any target; a published crate must use them in its library.
    unpublished = manifest.get("package", {}).get("publish") is False
    for table, text in (("dependencies", all_text if unpublished else lib_text), ("dev-dependencies", all_text)):
        for key in manifest.get(table, {}):
            ident = key.replace("-", "_")
            if not used(ident, text):
                problems.append(f"{os.path.relpath(crate_dir, ROOT)}/Cargo.toml: [{table}] {key} is not used")
    return problems


def main():
    with open(os.path.join(ROOT, "Cargo.toml"), "rb") as f:
        members = tomllib.load(f)["workspace"]["members"]
    crates = [os.path.join(ROOT, m) for m in members]
    if os.path.isfile(os.path.join(ROOT, "fuzz", "Cargo.toml")):
        crates.append(os.path.join(ROOT, "fuzz"))
    problems = [p for c in crates for p in check(c)]
    for p in problems:
        print(p)
    print(f"unused dependencies: {len(crates)} crates checked, {len(problems)} unused")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
