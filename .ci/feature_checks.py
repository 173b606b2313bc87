#!/usr/bin/env python3
"""Writes the workspace in which CI checks each cargo feature of shardlite on its own.

`cargo check --no-default-features --features X`, once per X, resolves the dependencies' own
features anew each time (tokio with or without `net`, hyper as reqwest or as tonic wants it),
so every feature set checks most of the dependency tree again, one after another. Here each
feature set is a package of its own, `shardlite-features-X`: shardlite's manifest with only its
library (the same `src/lib.rs`), its dependencies and lints, and `default = [X]`. One
`cargo check --workspace` then checks every feature set side by side, and the dependencies once,
with the features all the sets together give them. Each set still sees only the optional
dependencies its features enable; what no check here (or in the test build, with every feature
on) can see is a dependency's feature used without the shardlite feature that turns it on.

A package `shardlite-features-full` (every feature) builds the documentation on the same
checked dependencies, and keeps shardlite's binary, benchmarks and dev-dependencies so that
clippy lints the benchmarks there in check mode: no code generation and no linking, against
dependencies already checked, where building them in the tests' profile would compile and link
a dozen binaries nothing runs.

Usage: feature_checks.py ROOT OUT. ROOT holds shardlite's Cargo.toml; OUT is created. Prints
the packages to check, one per line.
"""

import json
import pathlib
import re
import shutil
import sys
import tomllib

# The sqlx driver's type features each add one self-contained module of conversions: they are
# checked together, on top of sqlx.
TYPE_FEATURES = ["time", "chrono", "uuid", "json"]

# Sections of the manifest a feature set keeps; the targets, dev-dependencies and profiles go.
KEPT = re.compile(r"^\[(package|features|dependencies|target\..*\.dependencies|lints\..*)\]$")
# What the package of every feature keeps besides: the binary (the benchmarks run it), the
# benchmarks and their dev-dependencies.
KEPT_BY_FULL = re.compile(r"^\[(\[bin\]|\[bench\]|dev-dependencies)\]$")


def feature_sets(features: dict) -> dict:
    """Each feature on its own, none, the type features together, and all (for the docs)."""
    sets = {"none": []}
    for name in features:
        if name in ("default", "full") or name in TYPE_FEATURES:
            continue
        sets[name] = [name]
    sets["types"] = TYPE_FEATURES
    sets["full"] = ["full"]
    return sets


def manifest(text: str, root: pathlib.Path, name: str, features: list, targets: bool) -> str:
    """shardlite's manifest as the package `name` with `features` on by default; with `targets`,
    its binary, benchmarks and dev-dependencies too, their paths made absolute."""
    out, keep, section = [], False, ""
    for line in text.splitlines():
        header = re.match(r"^\[\[?[^\]]+\]\]?$", line.strip())
        if header:
            section = line.strip()
            keep = bool(KEPT.match(section)) or (targets and bool(KEPT_BY_FULL.match(section)))
            if keep:
                out.append(line)
            if section == "[package]":
                out.append(f'name = "{name}"')
                out.append("publish = false")
                for auto in ("autobins", "autoexamples", "autotests", "autobenches"):
                    out.append(f"{auto} = false")
            continue
        if not keep:
            continue
        if section == "[package]" and re.match(r"^(name|readme|publish|auto\w+|build)\s*=", line):
            continue
        if section == "[features]" and re.match(r"^default\s*=", line):
            line = f"default = {json.dumps(features)}"
        if section in ("[[bin]]", "[[bench]]"):
            line = absolute_target(line, root)
        out.append(line)
    out.append("")
    out.append("[lib]")
    out.append('name = "shardlite"')
    out.append(f"path = {json.dumps(str(root / 'src' / 'lib.rs'))}")
    return "\n".join(out) + "\n"


def absolute_target(line: str, root: pathlib.Path) -> str:
    """A target's `path` made absolute; a benchmark's `name` followed by the path cargo would
    infer for it beside shardlite's manifest (`benches/NAME.rs`), which a target may not repeat."""
    path = re.match(r'^path\s*=\s*"([^"]+)"', line)
    if path:
        return f"path = {json.dumps(str(root / path.group(1)))}"
    return line


def with_bench_paths(text: str) -> str:
    """shardlite's manifest with an explicit `path` in every `[[bench]]` that has none."""
    blocks = re.split(r"(?m)^(?=\[)", text)
    for i, block in enumerate(blocks):
        if block.startswith("[[bench]]") and not re.search(r"(?m)^path\s*=", block):
            name = re.search(r'(?m)^name\s*=\s*"([^"]+)"', block).group(1)
            blocks[i] = block.replace("[[bench]]\n", f'[[bench]]\npath = "benches/{name}.rs"\n', 1)
    return "".join(blocks)


def main() -> None:
    root = pathlib.Path(sys.argv[1]).resolve()
    out = pathlib.Path(sys.argv[2])
    text = with_bench_paths((root / "Cargo.toml").read_text())
    features = tomllib.loads(text)["features"]
    members = []
    for set_name, enabled in feature_sets(features).items():
        package = f"shardlite-features-{set_name}"
        (out / set_name).mkdir(parents=True, exist_ok=True)
        (out / set_name / "Cargo.toml").write_text(manifest(text, root, package, enabled, set_name == "full"))
        members.append(set_name)
        if set_name != "full":
            print(package)
    (out / "Cargo.toml").write_text(
        "[workspace]\n"
        f"members = {json.dumps(members)}\n"
        'resolver = "3"\n\n'
        "[profile.dev]\n"
        "debug = false\n"
    )
    shutil.copyfile(root / "Cargo.lock", out / "Cargo.lock")
    # clippy's settings (unwrap allowed in tests, the error size threshold) for the benchmarks' lints.
    shutil.copyfile(root / "clippy.toml", out / "clippy.toml")


if __name__ == "__main__":
    main()
