#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""dt-schema validation of the nodes an overlay adds or changes.

Debian's dt-validate (dt-schema 2022.08) checks a whole tree and names a
node only by its last component ("serial@0" is any of six UARTs), and the
kernel's own am335x-boneblack tree has a couple of hundred findings of its
own. So this runs dt-validate's own validator (its schema_group, loaded from
/usr/bin/dt-validate) on the nodes the overlay touches only, with their
full paths, once in the merged tree and once in the base tree: a finding is
the overlay's when the node's base version does not have it. Each touched
node with a compatible must also match a schema for that compatible (not
only the generic ones), so a node nobody documented is a finding too.

    dtvalidate.py --schema processed-schema.json BASE.dtb OVERLAY.dtbo MERGED.dtb
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.machinery
import importlib.util
import io
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pins  # noqa: E402

DT_VALIDATE = "/usr/bin/dt-validate"


def _dt_validate_module():
    loader = importlib.machinery.SourceFileLoader("dt_validate", DT_VALIDATE)
    spec = importlib.util.spec_from_loader("dt_validate", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    mod.verbose = False
    mod.show_unmatched = 1          # "failed to match any schema with compatible"
    mod.show_matched = True
    mod.match_schema_file = None
    return mod


class Validator:
    """Loads the processed schema once; validates chosen nodes of trees."""

    def __init__(self, schema: Path):
        self.mod = _dt_validate_module()
        self.sg = self.mod.schema_group(str(schema))
        self.selects = {}
        for s in self.sg.schemas.values():
            s["$select_validator"] = self.mod.dtschema.DTValidator(s["select"])
            self.selects[s["$id"]] = json.dumps(s["select"])

    def selected_by_compatible(self, schema_id: str, compatible: str) -> bool:
        """Whether a schema is chosen by this compatible string."""
        return json.dumps(compatible) in self.selects.get(schema_id, "")

    def validate(self, dtb: Path, paths: list[str]) -> dict[str, dict]:
        """{path: {"errors": [text], "matched": [$id]}} for each path found."""
        tree = self.mod.dtschema.load(str(dtb))[0]
        out = {}
        for path in paths:
            node, disabled = tree, False
            name = "/"
            for part in [p for p in path.split("/") if p]:
                if not isinstance(node, dict) or part not in node:
                    node = None
                    break
                node = node[part]
                name = part
                if isinstance(node, dict) and "disabled" in node.get("status", []):
                    disabled = True
            if not isinstance(node, dict):
                continue
            buf = io.StringIO()
            with contextlib.redirect_stderr(buf):
                self.sg.check_node(tree, node, disabled, name, path, "DTB")
            errors, matched = [], []
            for block in re.split(r"\n(?=\S*DTB: )", buf.getvalue().strip()):
                if not block:
                    continue
                if "matched on schema(s)" in block:
                    matched += [ln.strip() for ln in block.splitlines()[1:]]
                else:
                    errors.append(re.sub(r"^\S*DTB(:\d+:\d+)?: ", "", block))
            out[path] = {"errors": errors, "matched": matched}
        return out


def overlay_findings(v: Validator, base_dtb: Path, dtbo: Path,
                     merged_dtb: Path) -> list[str]:
    base = pins.load_dtb(base_dtb)
    merged = pins.load_dtb(merged_dtb)
    touched = pins.overlay_nodes(pins.load_dtb(dtbo), base)
    after = v.validate(merged_dtb, touched)
    before = v.validate(base_dtb, touched)
    findings = []
    for path in touched:
        if path not in after:
            findings.append(f"{path}: not in the merged tree")
            continue
        old = set(before.get(path, {}).get("errors", []))
        findings += [f"{path}: {e}" for e in after[path]["errors"] if e not in old]
        node = pins.lookup(merged, path)
        compat = node.strings("compatible") if node else []
        if compat:
            ids = " ".join(after[path]["matched"])
            if not any(v.selected_by_compatible(i, compat[0])
                       for i in after[path]["matched"]):
                findings.append(f"{path}: compatible {compat[0]} matched no schema "
                                f"for it (matched: {ids or 'none'})")
    return findings


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schema", type=Path, required=True)
    ap.add_argument("base", type=Path)
    ap.add_argument("pairs", type=Path, nargs="+", help="OVERLAY.dtbo MERGED.dtb ...")
    args = ap.parse_args(argv)
    if len(args.pairs) % 2:
        ap.error("overlays and merged trees come in pairs")
    v = Validator(args.schema)
    findings = []
    for dtbo, merged in zip(args.pairs[::2], args.pairs[1::2]):
        findings += [f"{dtbo.name}: {f}" for f in
                     overlay_findings(v, args.base, dtbo, merged)]
    for f in findings:
        print(f, file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
