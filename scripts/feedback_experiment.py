"""Feedback model vs base model (thesis §5.5), in one command.

    python scripts/feedback_experiment.py --data DATA [--base llmopt/model/default/tiny] [--form fast]
                                          [--rounds 2] [--steps 500] [--out runs/feedback-experiment]

1. `write_feedback_dataset`: the base model answers the train/validation splits; the compiler's
   feedback and the verdict go into a feedback dataset (out/data).
2. Fine-tune the base model on it with the trainer (`training/configs/feedback-{form}.json` values,
   `init_from` = base, out/run); resumable, as every `llmopt train` run.
3. On the test split (--limit rows): improvement over -Oz (raw, no -Oz backup) of
   * base greedy (1 generation),  * base PS@(rounds+1) (same number of generations),
   * feedback model round 0 (Task Optimize),  * feedback model best of the loop (Task Feedback).
   Writes out/results.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="dataset directory (train/validation/test parquet)")
    parser.add_argument("--base", default=str(ROOT / "llmopt/model/default/tiny"), help="base model directory")
    parser.add_argument("--form", choices=("fast", "short", "long"), default="fast")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=500, help="fine-tuning steps")
    parser.add_argument("--train-limit", type=int, help="at most this many train rows for the feedback dataset")
    parser.add_argument("--limit", type=int, default=200, help="test rows evaluated")
    parser.add_argument("--out", default="runs/feedback-experiment")
    args = parser.parse_args()

    from data_pipeline.feedback_data import write_feedback_dataset
    from llmopt.dataset import read_rows
    from llmopt.feedback import feedback_loop
    from llmopt.harness import Harness
    from llmopt.metrics import overall_improvement
    from llmopt.predict import predict_many
    from llmopt.sampling import GreedyDecoding, PassListLM, PrioritySampling
    from training.config import load_config
    from training.train import train

    out = Path(args.out)
    base = PassListLM.load(args.base)
    with Harness() as harness:
        data = out / "data"
        if not (data / "README.md").exists():
            write_feedback_dataset(base, args.data, data, harness, form=args.form, limit=args.train_limit)
        cfg_file = ROOT / "training/configs" / f"feedback-{args.form}.json"
        if not cfg_file.exists():
            cfg_file = ROOT / "training/configs/feedback-fast.json"
        cfg = load_config(cfg_file, {"data_dir": str(data), "out_dir": str(out / "run"), "init_from": args.base,
                                     "max_steps": args.steps, "with_ir": args.form != "fast"})
        model_dir = train(cfg)
        tuned = PassListLM.load(model_dir)

        rows = read_rows(args.data, "test", limit=args.limit)
        irs = [r["ir"] for r in rows]
        oz = [r["instcount_oz"] for r in rows]
        results: dict[str, float] = {}
        greedy = predict_many(irs, GreedyDecoding(base), 1, harness, oz_backup=False)
        results["base greedy"] = overall_improvement(oz, [f.instcount_result for f in greedy])
        ps = predict_many(irs, PrioritySampling(base), args.rounds + 1, harness, oz_backup=False)
        results[f"base PS@{args.rounds + 1}"] = overall_improvement(oz, [f.instcount_result for f in ps])
        first, best = [], []
        for ir, row in zip(irs, rows, strict=True):
            loop = feedback_loop(tuned, ir, harness, form=args.form, rounds=args.rounds)
            counts = [r.feedback.instcount_output if r.feedback.instcount_output is not None
                      else row["instcount_input"] for r in loop.rounds]
            first.append(counts[0])
            best.append(min(counts))
        results["feedback round 0"] = overall_improvement(oz, first)
        results[f"feedback best of {args.rounds + 1} rounds"] = overall_improvement(oz, best)
    (out / "results.json").write_text(json.dumps({"form": args.form, "rounds": args.rounds, "rows": len(rows),
                                                  "improvement_over_oz": results}, indent=1) + "\n")
    for name, value in results.items():
        print(f"{name:<32} {value:+.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
