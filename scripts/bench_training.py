"""Training throughput (tokens/s) of the model presets on this machine.

    python scripts/bench_training.py [--presets tiny small] [--steps 6] [--data DIR] [--variants full,answer,answer-bf16]

Runs real training steps (AdamW, forward + backward, answer-only loss) on real examples: the
dataset in --data, else the sample dataset of training/sample_data.py.  Tokens counted are the
non-padding tokens of each batch; the first step (warm-up) is not timed.  Prints a markdown row
per preset and variant for docs/benchmarks.md.  Variants, all on the same batches in one run:
`full` = `model(**batch).loss` (logits at every position), `answer` = the trainer's `answer_loss`
(logits at the answer positions only), `-bf16` = under CPU bf16 autocast (`mixed_precision=bf16`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmopt.dataset import read_rows  # noqa: E402
from llmopt.llvm.passes import vocabulary  # noqa: E402
from training.data import BatchSchedule, collate, encode_rows  # noqa: E402
from training.presets import count_parameters, llama_config  # noqa: E402
from training.sample_data import cached_sample_dataset  # noqa: E402
from training.tokenizer import chars_per_token, train_tokenizer  # noqa: E402
from training.train import answer_loss  # noqa: E402

VARIANTS = ("full", "answer", "full-bf16", "answer-bf16")


def bench(preset: str, rows: list[dict], tokenizer, steps: int, batch_size: int, context: int,
          variant: str = "answer") -> dict:
    from transformers import LlamaForCausalLM

    torch.manual_seed(0)
    config = llama_config(preset, len(tokenizer), tokenizer, max_position_embeddings=context)
    model = LlamaForCausalLM(config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95))
    examples, _ = encode_rows(rows, tokenizer, context)
    schedule = BatchSchedule([len(e["input_ids"]) for e in examples], batch_size, seed=0)
    rates, lengths = [], []
    for step in range(steps + 1):
        batch = collate([examples[i] for i in schedule.batch(step)], tokenizer.pad_token_id)
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=variant.endswith("-bf16")):
            loss = answer_loss(model, batch) if variant.startswith("answer") else model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step:  # step 0 warms up allocators and kernels
            rates.append(int(batch["attention_mask"].sum()) / (time.perf_counter() - start))
            lengths.append(batch["input_ids"].shape[1])
    return {"preset": preset, "variant": variant, "parameters_m": count_parameters(config) / 1e6, "tokens_per_s": statistics.median(rates),
            "batch": f"{batch_size} x <= {max(lengths)}"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presets", nargs="+", default=["tiny", "small"])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--context", type=int, default=1536)
    parser.add_argument("--data", help="dataset dir with train.parquet (default: the sample dataset)")
    parser.add_argument("--rows", type=int, default=2000, help="train rows used (tokenizer and batches)")
    parser.add_argument("--variants", default="answer", help=f"comma list of {', '.join(VARIANTS)}")
    args = parser.parse_args()
    data = Path(args.data) if args.data else cached_sample_dataset(Path(tempfile.gettempdir()) / "llmopt_sample_data")
    rows = read_rows(data, "train")[: args.rows]
    with tempfile.TemporaryDirectory() as tmp:
        texts = [t for r in rows for t in (r["ir"], r["optimized_ir"])]
        tokenizer = train_tokenizer(texts, vocabulary(), tmp, vocab_size=4096)
        cpt = chars_per_token(tokenizer, [r["ir"] for r in read_rows(data, "validation")] or texts[:50])
    print(f"data {data} ({len(rows)} train rows), tokenizer {len(tokenizer)} tokens, {cpt:.2f} chars/token; "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads, load average {os.getloadavg()[0]:.1f}")
    variants = [v for v in args.variants.split(",") if v]
    if unknown := [v for v in variants if v not in VARIANTS]:
        parser.error(f"unknown variant(s) {', '.join(unknown)}: choose from {', '.join(VARIANTS)}")
    print("| preset | variant | parameters | batch (sequences x tokens) | training tokens/s |")
    print("|---|---|---|---|---|")
    for preset in args.presets:
        for variant in variants:
            r = bench(preset, rows, tokenizer, args.steps, args.batch_size, args.context, variant)
            print(f"| {r['preset']} | {variant} | {r['parameters_m']:.1f}M | {r['batch']} | {r['tokens_per_s']:.0f} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
