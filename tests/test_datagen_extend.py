"""Growing a finished dataset's train split (data_pipeline.extend) never touches its splits."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from data_pipeline import extend
from data_pipeline.job import JobConfig, run_job
from data_pipeline.list_matrix import load_matrix
from data_pipeline.writer import write_shard
from llmopt.dataset import read_rows

pytestmark = pytest.mark.timeout(300)

# Four functions a package, each different (a loop, a few operations: at least 5 instructions).
FUNCTION = """int f{k}(int *a, int n) {{
  int s = {k};
  for (int i = 0; i < n; i++) s += a[i] * {k} + (a[i] >> {shift});
  return s ^ n;
}}
"""


def _packages(root: Path, n: int = 4, per: int = 4) -> list[str]:
    specs = []
    for p in range(n):
        src = root / f"pkg{p}"
        src.mkdir(parents=True)
        body = "".join(FUNCTION.format(k=10 * p + i + 1, shift=i + 1) for i in range(per))
        (src / "lib.c").write_text(body)
        specs.append(f"dir:{src}")
    return specs


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.glob("*.parquet")}


def test_extend_labels_only_unlabelled_functions_of_train_packages(tmp_path: Path):
    base, out = tmp_path / "base", tmp_path / "more"
    cache = str(tmp_path / "c.sqlite")
    # Two shards of four (one function of each package a shard): the rest of each package stays unlabelled.
    cfg = JobConfig(sources=_packages(tmp_path / "src"), out=str(base), budget=8, greedy_steps=0, broadcast_top=2,
                    shard_functions=4, limit_shards=2, safety=False, workers=1, cache=cache, progress=False)
    run_job(cfg)
    before = _digest(base)
    splits = {s: read_rows(base, s, columns=["ir_hash", "package"]) for s in ("train", "validation", "test")}
    train_packages = {r["package"] for r in splits["train"]}
    assert splits["test"] and splits["validation"] and train_packages  # one package each, two in train

    extend.main([str(base), "--out", str(out), "--workers", "1"])
    rows = read_rows(out, "train")
    assert _digest(base) == before  # the base dataset is untouched
    labelled = {r["ir_hash"] for rows_ in splits.values() for r in rows_}
    assert rows and {r["package"] for r in rows} <= train_packages
    assert not labelled & {r["ir_hash"] for r in rows}
    assert len(rows) == 2 * len(train_packages)  # the two unlabelled functions of each train package
    assert all(r["instcount_best"] <= r["instcount_oz"] and r["optimized_ir"] for r in rows)
    assert not read_rows(out, "validation") and not read_rows(out, "test")
    card = (out / "README.md").read_text()
    assert f"A train-only extension of `{base}`" in card and "## Counts" in card
    # As a training mix: the base's train rows and the new ones, each function once.
    mix = read_rows(f"{base},{out}", "train", columns=["ir_hash"])
    assert len(mix) == len(splits["train"]) + len(rows)

    # Run again: nothing left to do, the same file. Other settings on the same folder are refused.
    first = _digest(out)
    extend.main([str(base), "--out", str(out), "--workers", "1"])
    assert _digest(out) == first
    with pytest.raises(SystemExit, match="other settings"):
        extend.main([str(base), "--out", str(out), "--min-tokens", "5"])
    # A second extension that skips the first: nothing of its train packages is left to label.
    functions = extend.phase0_functions(base)
    assert not extend.unlabelled_train_functions(base, functions, 0, seed=0, skip=[out])


def test_min_tokens_and_package_order(tmp_path: Path):
    base = tmp_path / "base"
    cfg = JobConfig(sources=_packages(tmp_path / "src"), out=str(base), budget=8, greedy_steps=0, broadcast_top=2,
                    shard_functions=4, limit_shards=2, safety=False, workers=1, cache=str(tmp_path / "c.sqlite"),
                    progress=False)
    run_job(cfg)
    functions = extend.phase0_functions(base)
    order = extend.unlabelled_train_functions(base, functions, 0, seed=0)
    packages = [functions[h]["package"] for h in order]
    # Interleaved: no package repeats before every package had its turn.
    assert packages[: len(set(packages))] == list(dict.fromkeys(packages))
    sizes = sorted(functions[h]["n_tokens"] for h in order)
    bigger = extend.unlabelled_train_functions(base, functions, sizes[len(sizes) // 2] + 1, seed=0)
    assert len(bigger) < len(order) and all(functions[h]["n_tokens"] > sizes[len(sizes) // 2] for h in bigger)


def test_load_matrix_merges_a_training_mix(tmp_path: Path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    write_shard(a / "lists-train.json.gz", {"lists": [["gvn"], ["sroa"]], "rows": {"x": {"oz": 9, "hits": [[1, 7]]}}})
    write_shard(b / "lists-train.json.gz", {"lists": [["sroa"], ["dse"]],
                                            "rows": {"y": {"oz": 5, "hits": [[0, 4], [1, 3]]}}})
    merged = load_matrix(f"{a},{b}", "train")
    assert merged["lists"] == [["gvn"], ["sroa"], ["dse"]]
    assert merged["rows"] == {"x": {"oz": 9, "hits": [[1, 7]]}, "y": {"oz": 5, "hits": [[1, 4], [2, 3]]}}
    assert load_matrix(f"{a},{tmp_path / 'missing'}", "train") is None


def test_beyond_cap_selects_past_the_cap_in_train_packages_only(tmp_path: Path):
    base, out = tmp_path / "base", tmp_path / "cap4"
    # A cap of 2 of each package's 4 functions: every package stops at the cap; all 8 kept ones are labelled.
    cfg = JobConfig(sources=_packages(tmp_path / "src"), out=str(base), budget=8, greedy_steps=0, broadcast_top=2,
                    package_cap=2, shard_functions=4, safety=False, workers=1, cache=str(tmp_path / "c.sqlite"),
                    progress=False)
    run_job(cfg)
    splits = {s: read_rows(base, s, columns=["ir_hash", "package"]) for s in ("train", "validation", "test")}
    train_packages = {r["package"] for r in splits["train"]}
    assert sum(map(len, splits.values())) == 8 and splits["test"] and splits["validation"]
    assert not extend.unlabelled_train_functions(base, extend.phase0_functions(base), 0, seed=0)

    capped = extend.capped_train_items(base)
    assert len(capped) == len(train_packages)  # the test and validation packages are never selected again
    extend.main([str(base), "--out", str(out), "--beyond-cap", "4", "--workers", "1"])
    rows = read_rows(out, "train")
    labelled = {r["ir_hash"] for rows_ in splits.values() for r in rows_}
    assert {r["package"] for r in rows} == train_packages
    assert len(rows) == 2 * len(train_packages) and not labelled & {r["ir_hash"] for r in rows}
    assert "past its package cap" in (out / "README.md").read_text()
    # Resumed: the re-selected packages are files, nothing is selected or labelled twice.
    first = _digest(out)
    extend.main([str(base), "--out", str(out), "--beyond-cap", "4", "--workers", "1"])
    assert _digest(out) == first
    with pytest.raises(SystemExit, match="other settings"):
        extend.main([str(base), "--out", str(out), "--beyond-cap", "8"])
