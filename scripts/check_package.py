"""Check a package for the catalog (data_pipeline/sources/catalog.py) before adding it.

    python scripts/check_package.py pypi lz4 4.4.5 [--include DIR] [--define X=1] [--path DIR] [--exclude S]

Downloads the pinned package with the registry's client, prints what its metadata and license files
say (you still read them: bundled libraries may carry other licenses), compiles every unit the
catalog entry would give, and counts defined functions and those likely inside the dataset's budget
(5+ instructions, at most 4,096 tokens at 3.7 characters a token). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from data_pipeline.compile import CompileError, compile_unit
from data_pipeline.sources.packages import Package, PackageSource, metadata_license

_DEFINE = re.compile(r"^define [^\n]*\{\n(.*?)^\}", re.M | re.S)


def function_sizes(module_ir: str) -> list[tuple[int, int]]:
    """(instruction-ish lines, characters) of every definition: a cheap stand-in for the real filter."""
    sizes = []
    for m in _DEFINE.finditer(module_ir):
        body = m.group(1)
        lines = [ln for ln in body.splitlines() if ln.startswith("  ")]
        sizes.append((len(lines), len(m.group(0))))
    return sizes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("manager", choices=("pypi", "npm"))
    ap.add_argument("name")
    ap.add_argument("version")
    ap.add_argument("--include", action="append", default=[])
    ap.add_argument("--define", action="append", default=[])
    ap.add_argument("--path", action="append", default=[])
    ap.add_argument("--exclude", action="append", default=[])
    ap.add_argument("--downloads", default="/tmp/llmopt-package-check")
    ap.add_argument("-j", type=int, default=1, help="parallel clang runs")
    ap.add_argument("--show-errors", type=int, default=5)
    args = ap.parse_args()
    pkg = Package(args.manager, args.name, args.version, "?", tuple(args.include), tuple(args.define),
                  tuple(args.exclude), tuple(args.path))
    source = PackageSource((pkg,), Path(args.downloads))
    root = source.root(pkg)
    license_files = sorted(str(p.relative_to(root)) for p in root.rglob("*")
                           if re.match(r"(LICEN[CS]E|COPYING|NOTICE|UNLICENSE)", p.name, re.I) and p.is_file())
    units = list(source.units())

    def one(unit):
        try:
            return unit, compile_unit(unit, timeout=300), None
        except (CompileError, RuntimeError) as err:
            return unit, None, str(err)

    ok, failed, defined, in_budget, errors = 0, 0, 0, 0, []
    with ThreadPoolExecutor(args.j) as pool:
        for _unit, module, err in pool.map(one, units):
            if module is None:
                failed += 1
                errors.append(err)
                continue
            ok += 1
            for n_lines, chars in function_sizes(module):
                defined += 1
                # llvm-extract + normalization shrink a body by about a third; 3.7 characters a token.
                in_budget += n_lines >= 5 and chars * 0.7 / 3.7 <= 4096
    print(json.dumps({
        "package": pkg.key, "version": pkg.version, "root": str(root),
        "metadata_license": metadata_license(root), "license_files": license_files[:20],
        "files": len(units), "compiled": ok, "failed": failed, "defined": defined, "likely_kept": in_budget,
        "errors": errors[: args.show_errors],
    }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
