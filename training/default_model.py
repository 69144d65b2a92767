"""Train the `tiny` preset on the real dataset (resumably) and export it as llmopt's shipped default model.

    scripts/train_default_model.sh [DATA_DIR] [--set key=value ...]

Rerunning resumes the run in runs/default.  The export goes to llmopt/model/default/ with a
generated model card (data, LLVM version, vocabulary, training tokens, validation metrics); while the shipped
default is an ensemble directory (`llmopt.model.loading.ensemble_members`), to its first member
(llmopt/model/default/tiny/), which the ensemble then decodes with.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from llmopt.dataset import read_rows
from llmopt.model.loading import single_model_dir
from llmopt.model.tokenizer import ModelMeta, load_tokenizer
from training.config import load_config, parse_override
from training.tokenizer import chars_per_token

REPO = Path(__file__).resolve().parent.parent
MAX_BYTES = 30 * 2**20
SHIPPED = ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
           "special_tokens_map.json", "llmopt.json")


def find_data_dirs(arg: str) -> str:
    """`find_data_dir` of each comma-separated part of `arg`, joined again (a training mix)."""
    return ",".join(str(find_data_dir(Path(part))) for part in arg.split(",") if part)


def find_data_dir(root: Path) -> Path:
    """`root` if it holds train.parquet, else the newest dataset directory below it."""
    if (root / "train.parquet").exists():
        return root
    found = sorted(root.rglob("train.parquet"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise FileNotFoundError(f"no train.parquet under {root}: build the dataset first (llmopt datagen)")
    return found[-1].parent


def _dataset_name(directory: Path) -> str:
    """`path (card title)` of one dataset directory, relative to the repo when inside it."""
    card = directory / "README.md"
    titles = [ln for ln in card.read_text().splitlines() if ln.startswith("# ")][:1] if card.exists() else []
    shown = directory.relative_to(REPO) if directory.is_relative_to(REPO) else directory
    return f"`{shown}`" + (f" ({titles[0].lstrip('# ')})" if titles else "")


def evaluation_table(eval_dir: Path) -> list[str]:
    """Markdown lines: `llmopt eval`'s improvement over -Oz (with -Oz backup) per method and budget, from
    `eval_dir/results.json`, so the card carries the numbers the model was shipped on."""
    eval_dir = eval_dir.resolve()
    results = json.loads((eval_dir / "results.json").read_text())
    ks = [str(k) for k in results["samples"]]
    shown = eval_dir.relative_to(REPO) if eval_dir.is_relative_to(REPO) else eval_dir
    lines = [f"## Evaluation (`{shown}`: {results['n_functions']} functions of `{results['dataset']}`)", "",
             "Improvement over -Oz in % of instructions, with -Oz backup, at k samples (compilations) per function:",
             "", "| method | " + " | ".join(f"@{k}" for k in ks) + " |", "|---|" + "---|" * len(ks)]
    for method, entry in results["methods"].items():
        cells = [entry["samples"].get(k, {}).get("oz_backup", {}).get("overall_improvement_pct") for k in ks]
        lines.append(f"| {method} | " + " | ".join("" if c is None else f"{c:.2f}" for c in cells) + " |")
    return lines


def model_card(run: Path, model: Path, data_dir: str, command: str, evaluation: Path | None = None) -> str:
    meta = ModelMeta.load(model)
    extra = meta.extra
    val = extra.get("validation") or {}
    tok = load_tokenizer(model)
    val_rows = read_rows(data_dir, "validation")
    cpt = chars_per_token(tok, [r["ir"] for r in val_rows[:200]]) if val_rows else float("nan")
    # A fine-tune records the model it started from instead of a preset (its steps are this run's only).
    origin = (f"preset `{extra.get('preset')}`" if extra.get("preset") else
              f"fine-tuned from `{extra.get('init_from')}` (steps and tokens below: the fine-tune's)")
    datasets = " + ".join(_dataset_name(Path(part).resolve()) for part in data_dir.split(",") if part)
    lines = [
        "# llmopt default model",
        "",
        "A small decoder-only Llama trained from scratch to predict LLVM `opt` pass lists that minimise the IR",
        "instruction count (thesis ch. 4 recipe, scaled down to CPU). Prompt: normalized input IR; answer: pass list,",
        "instruction counts before/after" + (", optimized IR" if meta.with_ir else "") + " (`llmopt/model/format.py`).",
        "",
        "| | |", "|---|---|",
        f"| architecture | LlamaForCausalLM, {origin}, {extra.get('parameters', 0) / 1e6:.2f}M parameters |",
        f"| context length | {extra.get('context_length')} tokens |",
        f"| tokenizer | byte-level BPE, {len(tok)} tokens, {cpt:.2f} characters/token on validation IR |",
        f"| LLVM version of the data | {meta.llvm_version} |",
        f"| data | {datasets}, {extra.get('train_examples')} training examples |",
        f"| training | {extra.get('steps')} steps, {extra.get('training_tokens', 0) / 1e6:.1f}M training tokens |",
        f"| answer includes optimized IR | {meta.with_ir} |",
        f"| labels | target policy `{extra.get('target_policy', 'best')}` (`training/targets.py`)" + (
            f"; set loss over up to {extra['set_members']} good lists per function (`training/set_loss.py`)"
            + (f", functions weighted `{extra['set_weighting']}`" if extra.get("set_weighting", "function") != "function"
               else "")
            + (f", list matrices: the first and `{extra['extra_matrices']}` (`data_pipeline/list_matrix.py`)"
               if extra.get("extra_matrices") else "")
            if extra.get("set_members") else "") + " |",
        "| inference | `llmopt.model.llama` (plain PyTorch, no `transformers` import); "
        "`transformers.AutoModelForCausalLM` loads the same files |",
        "",
        f"Pass vocabulary ({len(meta.passes)} passes, each one token): " + ", ".join(f"`{p}`" for p in meta.passes),
        "",
        "## Validation metrics (held-out functions, greedy decoding, measured by LLVM)",
        "",
    ]
    lines += [f"- {k}: {v:.3f}" for k, v in val.items()] or ["- (none recorded)"]
    if evaluation is not None:
        lines += ["", *evaluation_table(evaluation)]
    lines += ["", "## Reproduce", "", "```", command, "```", ""]
    if extra.get("init_from"):
        lines += [f"This run fine-tunes `{extra['init_from']}`: train that first (the config's `_comment` names the "
                  "chain of runs).", ""]
    shown = run.relative_to(REPO) if run.is_relative_to(REPO) else run
    lines += [f"Training logs: `{shown}/train_log.csv` and `validation_log.csv` (copies and the curve: "
              "`docs/results/training/`).", ""]
    return "\n".join(lines)


def export_default(run: Path, data_dir: str, command: str, target: Path | None = None, *,
                   source: Path | None = None, max_bytes: int | None = MAX_BYTES, evaluation: Path | None = None) -> Path:
    """Copy the run's best (else final) model, or `source`, to `target` (default: into the package) with a
    model card; refuse if over `max_bytes` (the package's 30 MB; None: no cap)."""
    target = target or single_model_dir()  # the shipped model, or the first member of the shipped ensemble
    if source is None:
        source = run / "best" if (run / "best" / "llmopt.json").exists() else run / "model"
    size = sum(f.stat().st_size for f in source.iterdir() if f.name in SHIPPED)
    if max_bytes is not None and size > max_bytes:
        raise ValueError(f"model is {size / 2**20:.1f} MB, over the {max_bytes / 2**20:.0f} MB budget of the package")
    card = model_card(run, source, data_dir, command, evaluation)  # before anything is deleted: it may fail
    target.mkdir(parents=True, exist_ok=True)
    for f in target.iterdir():
        if f.is_file():
            f.unlink()
    for name in SHIPPED:
        if (source / name).exists():
            shutil.copy2(source / name, target / name)
    (target / "README.md").write_text(card)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", nargs="?", default=str(REPO / "data"),
                        help="dataset dir (or a dir above it); several, comma-separated, train on their mix")
    parser.add_argument("--config", default=str(REPO / "training/configs/tiny.json"))
    parser.add_argument("--out", default=str(REPO / "runs/default"))
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--export-only", action="store_true", help="skip training; export the run as it is")
    parser.add_argument("--source", type=Path, default=None,
                        help="the model directory to ship (default: the run's best by validation, else its final model)")
    parser.add_argument("--evaluation", type=Path, default=None,
                        help="an `llmopt eval --out` directory of this model: its table goes into the model card")
    args = parser.parse_args(argv)
    data_dir = find_data_dirs(args.data)
    overrides = {"data_dir": data_dir, "out_dir": args.out, **dict(parse_override(o) for o in args.overrides)}
    cfg = load_config(args.config, overrides)
    if not args.export_only:
        from training.train import train

        train(cfg)
    given = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--export-only"]
    for flag in ("--source", "--evaluation"):  # which export, not how the model is trained
        at = given.index(flag) if flag in given else None
        given = given[:at] + given[at + 2:] if at is not None else [a for a in given if not a.startswith(flag + "=")]
    command = "scripts/train_default_model.sh " + " ".join(given)
    target = export_default(Path(cfg.out_dir), data_dir, command.strip(), source=args.source,
                            evaluation=args.evaluation)
    print(f"default model exported to {target}")
    print(json.dumps(ModelMeta.load(target).extra.get("validation", {}), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
