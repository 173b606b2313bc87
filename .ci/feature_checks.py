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
checked dependencies.

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


def manifest(text: str, root: pathlib.Path, name: str, features: list) -> str:
    """shardlite's manifest as the package `name` with `features` on by default."""
    out, keep, section = [], False, ""
    for line in text.splitlines():
        header = re.match(r"^\[\[?[^\]]+\]\]?$", line.strip())
        if header:
            section = line.strip()
            keep = bool(KEPT.match(section))
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
        out.append(line)
    out.append("")
    out.append("[lib]")
    out.append('name = "shardlite"')
    out.append(f"path = {json.dumps(str(root / 'src' / 'lib.rs'))}")
    return "\n".join(out) + "\n"


def main() -> None:
    root = pathlib.Path(sys.argv[1]).resolve()
    out = pathlib.Path(sys.argv[2])
    text = (root / "Cargo.toml").read_text()
    features = tomllib.loads(text)["features"]
    members = []
    for set_name, enabled in feature_sets(features).items():
        package = f"shardlite-features-{set_name}"
        (out / set_name).mkdir(parents=True, exist_ok=True)
        (out / set_name / "Cargo.toml").write_text(manifest(text, root, package, enabled))
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


if __name__ == "__main__":
    main()
