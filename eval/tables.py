"""Tables of an evaluation (thesis Fig. 4.5-4.9, 4.11, Table 6.1), each written as Markdown, CSV and JSON.

A `Table` is a title, column names and rows of plain values; `build_tables(results)` derives all
of them from the results dict of `eval.aggregate.aggregate`.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUMMARY_COLUMNS = [
    ("compilations", "compilations"),
    ("functions_improved", "functions improved"),
    ("functions_regressed", "functions regressed"),
    ("instructions_saved", "instructions saved"),
    ("instructions_regressed", "instructions regressed"),
    ("overall_improvement_pct", "overall improvement %"),
    ("mean_improvement_pct", "mean per-function %"),
    ("failed", "no usable list"),
]


@dataclass
class Table:
    name: str
    title: str
    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    note: str = ""

    def markdown(self) -> str:
        def cell(v: Any) -> str:
            if v is None:
                return "-"
            if isinstance(v, float):
                return f"{v:.2f}"
            return str(v)

        lines = ["| " + " | ".join(self.columns) + " |", "|" + "---|" * len(self.columns)]
        lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in self.rows]
        return "\n".join(lines) + "\n"

    def csv(self) -> str:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(self.columns)
        for row in self.rows:
            writer.writerow([f"{v:.4f}" if isinstance(v, float) else ("" if v is None else v) for v in row])
        return buf.getvalue()

    def records(self) -> list[dict]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def write(self, directory: Path) -> dict[str, Path]:
        directory.mkdir(parents=True, exist_ok=True)
        paths = {ext: directory / f"{self.name}.{ext}" for ext in ("md", "csv", "json")}
        paths["md"].write_text(f"### {self.title}\n\n{self.markdown()}" + (f"\n{self.note}\n" if self.note else ""))
        paths["csv"].write_text(self.csv())
        paths["json"].write_text(json.dumps({"title": self.title, "note": self.note, "rows": self.records()},
                                            indent=1) + "\n")
        return paths


def _fmt_k(k: str | int) -> str:
    return f"@{k}"


def overview(results: dict, backup: bool) -> Table:
    """Thesis Fig. 4.5 (without backup) / 4.6 (with -Oz backup): every method at every budget."""
    cols = ["method", "samples"] + [label for _, label in SUMMARY_COLUMNS]
    table = Table("overview_oz_backup" if backup else "overview",
                  ("With -Oz backup (thesis Fig. 4.6)" if backup else "Without -Oz backup (thesis Fig. 4.5)"),
                  cols)
    for method, entry in results["methods"].items():
        for k, summary in entry["samples"].items():
            s = summary["oz_backup"] if backup else summary
            table.rows.append([method, int(k)] + [s[key] for key, _ in SUMMARY_COLUMNS])
    table.note = ("All numbers w.r.t. -Oz on the same input by the same LLVM; improvement is sum-based. "
                  + ("Each function's result is min(best candidate, -Oz); one extra compilation whenever a "
                     "candidate is not -Oz." if backup else
                     "A function whose candidates all fail keeps its unoptimized instruction count."))
    return table


def sampling_curve(results: dict, backup: bool) -> Table:
    """Thesis Table 6.1: improvement over -Oz of the best of the first k samples, per method."""
    ks = [str(k) for k in results["samples"]]
    name = "sampling_curve_oz_backup" if backup else "sampling_curve"
    title = "Improvement over -Oz [%] by samples" + (" (with -Oz backup)" if backup else " (thesis Table 6.1)")
    table = Table(name, title, ["method"] + [f"sample {k}" for k in ks])
    for method, entry in results["methods"].items():
        row: list[Any] = [method]
        for k in ks:
            s = entry["samples"].get(k)
            row.append(None if s is None else (s["oz_backup"] if backup else s)["overall_improvement_pct"])
        table.rows.append(row)
    return table


def unique_samples(results: dict) -> Table:
    """Thesis Fig. 6.1: mean distinct pass lists among the first k samples, and compilations spent."""
    ks = [str(k) for k in results["samples"]]
    table = Table("unique_samples", "Unique samples per function (thesis Fig. 6.1) and compilations",
                  ["method"] + [f"unique@{k}" for k in ks] + [f"compilations@{k}" for k in ks])
    for method, entry in results["methods"].items():
        table.rows.append([method] + [entry["samples"][k]["unique_samples"] for k in ks]
                          + [entry["samples"][k]["compilations"] for k in ks])
    return table


def breakdown(results: dict, key: str) -> Table:
    """Thesis Fig. 4.8 (`by_source`) / Fig. 4.9 (`by_size`, instructions of the unoptimized input)."""
    group = "source" if key == "by_source" else "input instructions"
    title = ("Improvement over -Oz by source dataset (thesis Fig. 4.8)" if key == "by_source"
             else "Improvement over -Oz by input size (thesis Fig. 4.9)")
    table = Table(key, title, ["method@samples", group, "functions", "-Oz instructions", "improvement %",
                               "improvement % (-Oz backup)", "improved", "regressed"])
    for label, groups in results[key].items():
        for g, s in groups.items():
            table.rows.append([label, g, s["n_functions"], s["instcount_oz"], s["overall_improvement_pct"],
                               s["overall_improvement_pct_oz_backup"], s["functions_improved"],
                               s["functions_regressed"]])
    return table


def pass_frequency(results: dict, top: int | None = None) -> Table:
    """Thesis Fig. 4.7a: % of first-sample lists containing each pass, ordered by the labels' frequency."""
    stats = results["pass_frequency"]
    names = list(stats)
    order_src = stats.get("labels") or next(iter(stats.values()), {"frequency": {}})
    passes = list(order_src["frequency"])
    for s in stats.values():
        passes += [p for p in s["frequency"] if p not in passes]
    if top:
        passes = passes[:top]
    table = Table("pass_frequency", "Share of lists containing each pass, % (thesis Fig. 4.7a; first sample per "
                  "method, `labels` = the autotuner's)", ["pass"] + names)
    for p in passes:
        table.rows.append([p] + [100.0 * stats[n]["frequency"].get(p, 0.0) for n in names])
    return table


def list_length(results: dict) -> Table:
    """Thesis Fig. 4.7b: pass-list lengths (excluding lists that are exactly -Oz) and novelty."""
    table = Table("list_length", "Pass-list length and novelty (thesis Fig. 4.7b; first sample per method)",
                  ["method", "lists", "exactly -Oz %", "-Oz inside longer list %", "mean length (excl. -Oz)",
                   "max length", "distinct lists", "distinct lists not in training labels"])
    for name, s in results["pass_frequency"].items():
        table.rows.append([name, s["n_lists"], s["oz_only_pct"], s["oz_in_longer_pct"], s["mean_length_excl_oz"],
                           s["max_length"], s["distinct_lists"], s["lists_not_in_training"]])
    return table


def objsize(results: dict) -> Table:
    """The proxy's honesty: object size (.text+.data) of each chosen list vs -Oz's."""
    table = Table("objsize", "Object size of the chosen lists vs -Oz (is instcount an honest proxy?)",
                  ["method@samples", "functions", "objsize improvement %", "instcount wins",
                   "of which objsize loses", "of which objsize ties", "objsize wins", "objsize losses"])
    for label, s in results.get("objsize", {}).items():
        table.rows.append([label, s["functions_sized"], s["objsize_improvement_pct"], s["instcount_wins"],
                           s["instcount_win_objsize_loss"], s["instcount_win_objsize_tie"], s["objsize_wins"],
                           s["objsize_losses"]])
    table.note = ("Chosen list = best by instcount without backup; functions with no usable list are left out. "
                  "objsize = bytes of .text + .data after llc -filetype=obj.")
    return table


def quality(results: dict) -> list[Table]:
    """Thesis Fig. 4.4 (code quality of the generated optimized IR) and Fig. 4.11 (its parse errors)."""
    q = results.get("quality")
    if not q:
        return []
    main = Table("quality", "Generated-IR quality (thesis Fig. 4.4): greedy full answers",
                 ["functions", "answers with IR %", "IR parses %", "exact match %", "BLEU",
                  "input count MAPE %", "output count MAPE %", "copy-input BLEU", "pass lists valid %"])
    main.rows.append([q["n_functions"], q["has_ir_pct"], q["parses_pct"], q["exact_match_pct"], q["bleu"],
                      q["instcount_input_mape"], q["instcount_output_mape"], q["copy_input_bleu"],
                      q["valid_pass_lists_pct"]])
    main.note = ("BLEU (sacrebleu, 0..1) of generated vs compiler-produced IR for the generated pass list; "
                 "copy-input BLEU is the baseline of copying the unoptimized input.")
    errors = Table("parse_errors", "Why generated IR does not parse (thesis Fig. 4.11)", ["error category", "n"])
    for cat, n in q["parse_errors"].items():
        errors.rows.append([cat, n])
    errors.rows.append(["Total", sum(q["parse_errors"].values())])
    return [main, errors]


def build_tables(results: dict) -> list[Table]:
    tables = [overview(results, False), overview(results, True), sampling_curve(results, False),
              sampling_curve(results, True), unique_samples(results), breakdown(results, "by_source"),
              breakdown(results, "by_size"), pass_frequency(results), list_length(results)]
    if results.get("objsize"):
        tables.append(objsize(results))
    tables += quality(results)
    return tables
