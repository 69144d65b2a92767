"""The training loop, in one file (nanoGPT style): `train(config)`.

    python -m training.cli training/configs/tiny.json          # or: llmopt train training/configs/tiny.json

Layout of `out_dir`:
    tokenizer/            trained once (or copied), reused on resume
    checkpoint/           accelerate state (model, optimizer, RNG) + trainer_state.json; replaced atomically
    train_log.csv         step, tokens, loss, lr, tokens/s      (also tensorboard/)
    validation_log.csv    validation loss and ValidationCallback metrics every eval_interval steps
    best/                 the model with the best validation improvement over -Oz
    model/                the final model (HF from_pretrained + tokenizer + llmopt.json)
`max_minutes` caps one call's wall-clock time (set-up included): the run then stops as at `max_steps`
(checkpoint, export; the reason is printed and kept in llmopt.json as `stop_reason`), and the same
command resumes it.  Killing the process and running the same command again resumes from the last checkpoint; batches
are a function of (seed, step), so the resumed run sees the same data as an uninterrupted one.
"""

from __future__ import annotations

import copy
import csv
import json
import math
import shutil
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch

from llmopt.dataset import read_rows
from llmopt.model import format as fmt
from llmopt.model.tokenizer import ModelMeta, load_tokenizer
from training import lora as lora_mod
from training.config import TrainConfig
from training.data import BatchSchedule, collate, encode_rows, pick_variant
from training.distill import Teacher
from training.presets import llama_config
from training.set_loss import (
    collate_sets,
    encode_set_rows,
    function_weights,
    matrix_best,
    set_loss,
    target_sets,
)
from training.targets import choose_targets, keep_unimproved
from training.validation import MeasureFn, ValidationCallback, harness_measure

VAL_LOSS_EXAMPLES = 128
TRAIN_COLUMNS = ["step", "epoch", "tokens", "loss", "lr", "tokens_per_s", "elapsed_s"]
VAL_COLUMNS = ["step", "tokens", "val_loss", "improvement_over_oz", "autotuner_improvement", "valid_pass_lists",
               "counts_present", "instcount_input_mape", "instcount_output_mape", "ir_parses", "ir_exact_match",
               "ir_bleu"]


def lr_at(step: int, cfg: TrainConfig, elapsed_s: float = 0.0) -> float:
    """Linear warm-up to `lr`, then cosine decay to `lr * min_lr_ratio` at `max_steps` (with
    `lr_schedule="minutes"`, or at `max_minutes` of wall-clock time `elapsed_s` if that comes first)."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = min(1.0, (step - cfg.warmup_steps) / max(1, cfg.max_steps - cfg.warmup_steps))
    if cfg.lr_schedule == "minutes":
        progress = max(progress, min(1.0, elapsed_s / (cfg.max_minutes * 60)))
    min_lr = cfg.lr * cfg.min_lr_ratio
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (cfg.lr - min_lr)


def _pass_vocabulary(rows: list[dict[str, Any]], llvm_version: int | None) -> list[str]:
    from llmopt.llvm.passes import vocabulary

    passes = vocabulary(llvm_version)
    unknown = {p for r in rows for p in r["passes"]} - set(passes)
    if unknown:
        raise ValueError(f"dataset uses passes outside the LLVM {llvm_version} vocabulary: {sorted(unknown)[:5]}")
    return passes


def build_tokenizer(cfg: TrainConfig, rows: list[dict[str, Any]], passes: list[str], llvm_version: int | None,
                    out: Path, source: str | None = None) -> Any:
    """out/tokenizer: kept on resume, else copied from `source`, else trained on the training IR."""
    target = out / "tokenizer"
    if (target / "llmopt.json").exists():
        return load_tokenizer(target)
    if source:
        shutil.copytree(source, target, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("*.safetensors", "*.bin", "config.json", "generation_config.json",
                                                      "README.md"))
        return load_tokenizer(target)
    from training.tokenizer import train_tokenizer

    texts = (text for r in rows for text in (r["ir"], r["optimized_ir"]))
    return train_tokenizer(texts, passes, target, vocab_size=cfg.tokenizer_vocab_size, llvm_version=llvm_version)


def build_model(cfg: TrainConfig, passes: list[str], tokenizer: Any | None, out: Path) -> tuple[Any, Any]:
    """(model, tokenizer): a preset from scratch, or `init_from` a checkpoint (optionally LoRA-wrapped)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    if cfg.init_from is None:
        torch.manual_seed(cfg.seed)
        config = llama_config(cfg.model_preset, len(tokenizer), tokenizer,
                              **{"max_position_embeddings": cfg.context_length, **cfg.model_overrides})
        return LlamaForCausalLM(config), tokenizer
    from llmopt.model.loading import ensemble_members

    members = ensemble_members(cfg.init_from)
    if members:  # e.g. the shipped default: several models, no single set of weights to start from
        raise ValueError(f"init_from {cfg.init_from} is an ensemble directory: start from one of its members "
                         f"({', '.join(str(m) for m in members)})")
    # Float32 master weights whatever the checkpoint holds: a bf16 export (device_export, the carried
    # init of GPU runs) would otherwise load, and train, in pure bf16.
    model = AutoModelForCausalLM.from_pretrained(cfg.init_from, dtype=torch.float32)
    added = 0
    if tokenizer is None:  # a foreign checkpoint: its own tokenizer plus llmopt's tokens
        tokenizer = AutoTokenizer.from_pretrained(cfg.init_from)
        added = lora_mod.adapt_tokenizer(tokenizer, passes)
        tokenizer.save_pretrained(str(out / "tokenizer"))
        ModelMeta(passes=passes).save(out / "tokenizer")
    if len(tokenizer) != model.get_input_embeddings().weight.shape[0]:
        model.resize_token_embeddings(len(tokenizer))
        added = max(added, 1)
    if cfg.lora.enabled:
        model = lora_mod.wrap(model, cfg.lora, train_embeddings=added > 0)
    return model, tokenizer


def export_model(model: Any, tokenizer: Any, meta: ModelMeta, directory: Path) -> None:
    """Save a plain HF model (LoRA merged into a copy) + tokenizer + llmopt.json, atomically."""
    tmp = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    if hasattr(model, "merge_and_unload"):
        model = lora_mod.merge(copy.deepcopy(model))
    model.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    meta.save(tmp)
    shutil.rmtree(directory, ignore_errors=True)
    tmp.rename(directory)


def answer_loss(model: Any, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Mean cross-entropy over the answer tokens (labels != -100), as `model(**batch).loss`, but with
    logits only where a label is: the prompt's ~1,000 positions would each cost a vocabulary-wide
    projection and softmax for nothing (1.6x faster steps on the v3 data, tiny preset).  The decoder and
    the head are called directly: `logits_to_keep` takes a boolean mask only in some transformers versions."""
    labels = batch["labels"]
    keep = labels[:, 1:] != -100  # position i predicts token i + 1
    hidden = model.get_decoder()(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    logits = model.get_output_embeddings()(hidden[:, :-1][keep])
    return torch.nn.functional.cross_entropy(logits.float(), labels[:, 1:][keep])


@torch.no_grad()
def validation_loss(model: Any, examples: list[dict[str, Any]], pad_id: int, batch_size: int,
                    coverage: int = 1) -> float:
    """The training loss (answer or set loss, by the examples' kind) per answer token over `examples`."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    sets = bool(examples) and "members" in examples[0]
    total, count = 0.0, 0
    for start in range(0, len(examples), batch_size):
        chunk = examples[start:start + batch_size]
        batch = {k: v.to(device) for k, v in (collate_sets(chunk, pad_id) if sets else collate(chunk, pad_id)).items()}
        n = int(batch["answer_tokens"]) if sets else int((batch["labels"][:, 1:] != -100).sum())
        total += float(set_loss(model, batch, coverage=coverage) if sets else answer_loss(model, batch)) * n
        count += n
    model.train(was_training)
    return total / max(count, 1)


class _CsvLog:
    def __init__(self, path: Path, columns: list[str]):
        self.path, self.columns = path, columns
        if not path.exists():
            path.write_text(",".join(columns) + "\n")

    def write(self, values: dict[str, Any]) -> None:
        with self.path.open("a", newline="") as f:
            csv.DictWriter(f, self.columns, extrasaction="ignore").writerow(values)


def train(cfg: TrainConfig, *, measure: MeasureFn | None = None, progress: bool = True) -> Path:
    """Train (or resume) per `cfg`; returns the exported model directory (`out_dir/model`).

    `measure` is the validation's compile-and-measure function (default: the harness).
    """
    return _Trainer(cfg, measure).run(progress)


def _load_data(cfg: TrainConfig, matrix: dict[str, Any] | None
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int | None, list[str]]:
    """(train rows, validation rows, LLVM version, pass vocabulary); `matrix`: the set loss's (`_matrix`)."""
    train_rows = read_rows(cfg.data_dir, "train")[: cfg.max_train_examples]
    # Under the set loss a function the matrix's lists beat -Oz on teaches them, whatever its label.
    improved = {h for h, e in matrix["rows"].items() if e["hits"]} if matrix else set()
    train_rows = keep_unimproved(train_rows, cfg.keep_unimproved, cfg.seed, improved)
    val_rows = read_rows(cfg.data_dir, "validation")
    if not train_rows:
        raise FileNotFoundError(f"no training rows in {cfg.data_dir}/train.parquet")
    llvm_version = train_rows[0].get("llvm_version")
    return train_rows, val_rows, llvm_version, _pass_vocabulary(train_rows, llvm_version)


def _encode_train(cfg: TrainConfig, rows: list[dict[str, Any]], tokenizer: Any,
                  matrix: dict[str, Any] | None) -> tuple[list[dict[str, Any]], int]:
    """Training examples: one label per row (`target_policy`), or with `set_members` the row's good
    lists under the set loss, its `target_policy` label first."""
    targets = choose_targets(rows, cfg.target_policy)
    if not cfg.set_members:
        return encode_rows(rows, tokenizer, cfg.context_length, with_ir=cfg.with_ir, targets=targets)
    sets = target_sets(rows, [t[0] for t in targets], matrix, cfg.set_members)
    best = [matrix_best(r, matrix) for r in rows]
    return encode_set_rows(rows, sets, tokenizer, cfg.context_length,
                           function_weights(rows, cfg.set_weighting, best))


def _matrix(cfg: TrainConfig) -> dict[str, Any]:
    """The training data's (function x list) matrix, which the set loss needs."""
    from data_pipeline.list_matrix import load_matrix, matrix_paths

    names = [n for n in cfg.extra_matrices.split(",") if n]
    matrix = load_matrix(cfg.data_dir, "train", names)
    if matrix is None:
        missing = next(path for path in matrix_paths(cfg.data_dir, "train", names) if not path.exists())
        raise FileNotFoundError(f"set_members needs {missing}: build it with `python -m data_pipeline.list_matrix "
                                f"{missing.parent}` (a named one: the command in that module's docstring)")
    return matrix


def _encode_validation(cfg: TrainConfig, rows: list[dict[str, Any]], tokenizer: Any) -> list[dict[str, Any]]:
    """The validation loss's examples, taught as training teaches: the same share of unimproved functions
    (else ~85% of them would measure how likely `default<Oz>` is, which the set loss deliberately
    unlearns), the same label policy, and the set loss over each function's stored good lists."""
    rows = keep_unimproved(rows, cfg.keep_unimproved, cfg.seed)[:VAL_LOSS_EXAMPLES]
    if not rows:
        return []
    targets = choose_targets(rows, cfg.target_policy) if not cfg.with_ir else None
    if not cfg.set_members:
        return encode_rows(rows, tokenizer, cfg.context_length, with_ir=cfg.with_ir, targets=targets)[0]
    sets = target_sets(rows, [t[0] for t in targets], None, cfg.set_members)
    return encode_set_rows(rows, sets, tokenizer, cfg.context_length, function_weights(rows, cfg.set_weighting))[0]


def _model_and_tokenizer(cfg: TrainConfig, rows: list[dict[str, Any]], passes: list[str], llvm_version: int | None,
                         out: Path) -> tuple[Any, Any]:
    source = cfg.tokenizer
    if source is None and cfg.init_from and (Path(cfg.init_from) / "llmopt.json").exists():
        source = cfg.init_from  # fine-tuning an llmopt model: keep its tokenizer
    tokenizer = None  # None: a foreign checkpoint, whose own tokenizer build_model extends
    if cfg.init_from is None or source or (out / "tokenizer" / "llmopt.json").exists():
        tokenizer = build_tokenizer(cfg, rows, passes, llvm_version, out, source)
    model, tokenizer = build_model(cfg, passes, tokenizer, out)
    tokenizer.padding_side = "right"
    return model, tokenizer


def _optimizer(cfg: TrainConfig, model: Any) -> torch.optim.Optimizer:
    """AdamW, no weight decay on norms and biases."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg.weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), fused=False)


def _validation_callback(cfg: TrainConfig, val_rows: list[dict[str, Any]], passes: list[str],
                         measure: MeasureFn | None) -> ValidationCallback | None:
    if not val_rows or cfg.val_functions <= 0:
        return None
    if measure is None:
        try:
            measure = harness_measure()
        except Exception as err:  # no LLVM here: keep training, report loss only
            print(f"validation metrics disabled: {err}")
            return None
    return ValidationCallback(val_rows[: cfg.val_functions], measure, passes, cfg.val_max_new_tokens,
                              cfg.val_batch_size, cfg.val_generate_ir and cfg.with_ir)


class _Trainer:
    """One run of `train`: set-up, resume, the step loop, validation, checkpoints and the export."""

    def __init__(self, cfg: TrainConfig, measure: MeasureFn | None):
        from accelerate import Accelerator
        from accelerate.utils import set_seed
        from torch.utils.tensorboard import SummaryWriter

        self.started = time.time()  # max_minutes counts from here: set-up (data, tokenizer) included
        self.stop_reason: str | None = None
        self.cfg, self.out = cfg, Path(cfg.out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.accelerator = Accelerator(mixed_precision=cfg.mixed_precision)
        if torch.cuda.is_available():
            # cuDNN's fused attention backward failed mid-run in all four runs of one H100 call ("mha_graph.
            # execute(...).is_good()", pytorch#190321, intermittent): SDPA's flash / memory-efficient kernels.
            torch.backends.cuda.enable_cudnn_sdp(False)
        set_seed(cfg.seed)
        self.main = self.accelerator.is_main_process
        matrix = _matrix(cfg) if cfg.set_members else None  # read once: rows to keep, then the targets
        train_rows, val_rows, llvm_version, passes = _load_data(cfg, matrix)
        model, self.tokenizer = _model_and_tokenizer(cfg, train_rows, passes, llvm_version, self.out)
        self.examples, skipped = _encode_train(cfg, train_rows, self.tokenizer, matrix)
        self.val_examples = _encode_validation(cfg, val_rows, self.tokenizer)
        self.n_params = sum(p.numel() for p in model.parameters())
        self.teacher = Teacher.load(cfg.distill_from, self.tokenizer) if cfg.distill_from else None
        if self.main:
            print(f"{len(self.examples)} training examples ({skipped} longer than {cfg.context_length} tokens "
                  f"skipped), {len(val_rows)} validation; model {self.n_params / 1e6:.2f}M parameters, "
                  f"vocab {len(self.tokenizer)}")
            (self.out / "train_config.json").write_text(json.dumps(cfg.to_dict(), indent=1) + "\n")
        self.model, self.optimizer = self.accelerator.prepare(model, _optimizer(cfg, model))
        self.state = self._resume()
        self.meta = ModelMeta(passes=passes, llvm_version=llvm_version, with_ir=cfg.with_ir)
        self.callback = _validation_callback(cfg, val_rows, passes, measure)
        self.last_metrics: dict[str, float] = {}
        out, step = self.out, self.state["step"]
        self.writer = SummaryWriter(str(out / "tensorboard"), purge_step=step or None) if self.main else None
        self.train_log = _CsvLog(out / "train_log.csv", TRAIN_COLUMNS)
        self.val_log = _CsvLog(out / "validation_log.csv", VAL_COLUMNS)

    # ---- checkpoints: out/checkpoint is replaced atomically (checkpoint.tmp, then two renames)
    def _resume(self) -> dict[str, Any]:
        out, ckpt = self.out, self.out / "checkpoint"
        if not (ckpt / "trainer_state.json").exists() and (out / "checkpoint.tmp" / "trainer_state.json").exists():
            (out / "checkpoint.tmp").rename(ckpt)  # killed between the two renames of a checkpoint save
        if not (ckpt / "trainer_state.json").exists():
            return {"step": 0, "tokens": 0, "best_improvement": None}
        self.accelerator.load_state(str(ckpt))
        state = json.loads((ckpt / "trainer_state.json").read_text())
        if self.main:
            print(f"resuming from step {state['step']} ({state['tokens']} tokens)")
            for log in ("train_log.csv", "validation_log.csv"):  # drop rows logged after that checkpoint
                _truncate_log(out / log, state["step"])
        return state

    def save_checkpoint(self) -> None:
        tmp, ckpt = self.out / "checkpoint.tmp", self.out / "checkpoint"
        if self.main:
            shutil.rmtree(tmp, ignore_errors=True)
        self.accelerator.wait_for_everyone()
        self.accelerator.save_state(str(tmp))
        if self.main:
            (tmp / "trainer_state.json").write_text(json.dumps(self.state))  # written last: marks it complete
            shutil.rmtree(ckpt, ignore_errors=True)
            tmp.rename(ckpt)
        self.accelerator.wait_for_everyone()

    def run_meta(self, extra: dict[str, Any]) -> ModelMeta:
        cfg, m = self.cfg, copy.deepcopy(self.meta)
        m.extra.update({"preset": cfg.model_preset if cfg.init_from is None else None, "init_from": cfg.init_from,
                        "lora": cfg.lora.enabled, "parameters": self.n_params, "steps": self.state["step"],
                        "training_tokens": self.state["tokens"], "context_length": cfg.context_length,
                        "data_dir": str(cfg.data_dir), "train_examples": len(self.examples),
                        "target_policy": cfg.target_policy, "set_members": cfg.set_members,
                        "set_weighting": cfg.set_weighting, "set_coverage": cfg.set_coverage,
                        "prompt_loss_weight": cfg.prompt_loss_weight, "distill_from": cfg.distill_from,
                        "distill_weight": cfg.distill_weight if cfg.distill_from else None,
                        "extra_matrices": cfg.extra_matrices, "stop_reason": self.stop_reason, **extra})
        return m

    # ---- validation
    def validate(self) -> None:
        unwrapped = self.accelerator.unwrap_model(self.model)
        metrics: dict[str, float] = {}
        if self.val_examples:
            metrics["val_loss"] = validation_loss(unwrapped, self.val_examples, self.tokenizer.pad_token_id,
                                                  self.cfg.batch_size, self.cfg.set_coverage)
        if self.callback is not None and self.main:
            metrics.update(self.callback(unwrapped, self.tokenizer))
        if not self.main:
            return
        step = self.state["step"]
        self.last_metrics = metrics
        self.val_log.write({"step": step, "tokens": self.state["tokens"], **metrics})
        for k, v in metrics.items():
            self.writer.add_scalar(f"validation/{k}", v, step)
        print(f"step {step}: " + ", ".join(f"{k} {v:.3f}" for k, v in metrics.items()))
        # Best = highest improvement over -Oz; equal improvements (a model that mostly answers -Oz
        # scores 0.0 at every evaluation) go to the lower validation loss, not the earliest step.
        rank = (metrics.get("improvement_over_oz", float("-inf")), -metrics["val_loss"])
        best = self.state["best_improvement"]
        if best is None or rank > tuple(best if isinstance(best, list) else (best, float("-inf"))):
            self.state["best_improvement"] = list(rank)
            export_model(unwrapped, self.tokenizer, self.run_meta({"validation": metrics}), self.out / "best")

    # ---- the loop
    def _step(self, schedule: BatchSchedule, lr: float) -> tuple[float, int]:
        """One optimizer step of `grad_accum` micro-batches: (loss, tokens seen by all processes)."""
        cfg, accelerator, model = self.cfg, self.accelerator, self.model
        world, rank = accelerator.num_processes, accelerator.process_index
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        loss_sum, tokens = 0.0, 0
        for micro in range(cfg.grad_accum):
            index = (self.state["step"] * cfg.grad_accum + micro) * world + rank
            chosen = [pick_variant(self.examples[i], cfg.seed, schedule.epoch_of(index), int(i))
                      for i in schedule.batch(index)]
            pad = self.tokenizer.pad_token_id
            batch = {k: v.to(accelerator.device)
                     for k, v in (collate_sets(chosen, pad) if cfg.set_members else collate(chosen, pad)).items()}
            # The teacher answers as it would at inference: outside the student's autocast.
            teacher = self.teacher.targets(chosen) if self.teacher else None
            # Sync gradients across processes only on the last micro-batch.
            sync = accelerator.no_sync(model) if micro < cfg.grad_accum - 1 else nullcontext()
            with sync:
                with accelerator.autocast():  # both call the decoder itself: accelerate's autocast wraps only forward()
                    if cfg.set_members:
                        loss = set_loss(model, batch, cfg.prompt_loss_weight, cfg.set_coverage, teacher,
                                        cfg.distill_weight) / cfg.grad_accum
                    else:
                        loss = answer_loss(model, batch) / cfg.grad_accum
                accelerator.backward(loss)
            loss_sum += loss.item()
            n_tokens = sum(e.get("length", len(e["input_ids"])) for e in chosen) * world  # set members too
            self.state["tokens"] += n_tokens
            tokens += n_tokens
        if cfg.grad_clip > 0:
            accelerator.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return loss_sum, tokens

    def _log_step(self, row: dict[str, Any], loss_sum: float, bar: Any) -> None:
        self.train_log.write(row)
        for key in ("loss", "lr", "tokens_per_s"):
            self.writer.add_scalar(f"train/{key}", row[key], row["step"])
        bar.set_postfix(loss=f"{loss_sum:.3f}", tok_s=f"{row['tokens_per_s']:.0f}")

    def _should_stop(self) -> str | None:
        """"max_steps", "max_minutes" (the wall-clock cap, agreed by all processes) or None: go on."""
        cfg = self.cfg
        if self.state["step"] >= cfg.max_steps:
            return "max_steps"
        if cfg.max_minutes <= 0:
            return None
        late = time.time() - self.started >= cfg.max_minutes * 60
        if self.accelerator.num_processes > 1:  # one clock decides for all, or they deadlock in save_state
            late = bool(self.accelerator.reduce(torch.tensor([int(late)], device=self.accelerator.device), "max"))
        return "max_minutes" if late else None

    def run(self, progress: bool) -> Path:
        from tqdm import tqdm

        cfg, state, main = self.cfg, self.state, self.main
        schedule = BatchSchedule([e.get("length", len(e["input_ids"])) for e in self.examples], cfg.batch_size,
                                 cfg.seed)
        world = self.accelerator.num_processes
        self.model.train()
        bar = tqdm(total=cfg.max_steps, initial=state["step"], disable=not (progress and main), desc="train")
        # tokens/s counts training compute only (not validation or checkpoint time)
        busy, tokens_log, start = 0.0, 0, time.time()
        self.stop_reason = "max_steps" if state["step"] >= cfg.max_steps else None  # else at least one step
        while self.stop_reason is None:
            t_step = time.time()
            lr = lr_at(state["step"], cfg, time.time() - self.started)
            loss_sum, tokens = self._step(schedule, lr)
            tokens_log += tokens
            busy += time.time() - t_step
            state["step"] += 1
            bar.update(1)
            self.stop_reason = last = self._should_stop()
            if state["step"] % cfg.log_interval == 0 or last:
                epoch = round(state["step"] * cfg.grad_accum * world / schedule.per_epoch, 3)
                row = {"step": state["step"], "epoch": epoch, "tokens": state["tokens"], "loss": round(loss_sum, 5),
                       "lr": lr, "tokens_per_s": round(tokens_log / max(busy, 1e-9), 1),
                       "elapsed_s": round(time.time() - start, 1)}
                busy, tokens_log = 0.0, 0
                if main:
                    self._log_step(row, loss_sum, bar)
            if cfg.eval_interval > 0 and state["step"] % cfg.eval_interval == 0:
                self.validate()
            if state["step"] % cfg.checkpoint_interval == 0 or last:
                self.save_checkpoint()
        bar.close()
        if main:
            print(f"training stopped at step {state['step']} of {cfg.max_steps} ({self.stop_reason}, "
                  f"{(time.time() - self.started) / 60:.1f} min)")
        return self._finish()

    def _finish(self) -> Path:
        cfg, out = self.cfg, self.out
        if cfg.eval_interval > 0 and self.state["step"] % cfg.eval_interval != 0 and not self.last_metrics:
            self.validate()
        if not self.last_metrics and (out / "validation_log.csv").exists():
            self.last_metrics = _last_row(out / "validation_log.csv")
        final = out / "model"
        if self.main:
            export_model(self.accelerator.unwrap_model(self.model), self.tokenizer,
                         self.run_meta({"validation": self.last_metrics}), final)
            self.writer.close()
        self.accelerator.wait_for_everyone()
        return final


def _truncate_log(path: Path, step: int) -> None:
    if not path.exists():
        return
    lines = path.read_text().splitlines(keepends=True)
    keep = lines[:1] + [ln for ln in lines[1:] if int(ln.split(",", 1)[0]) <= step]
    if len(keep) != len(lines):
        path.write_text("".join(keep))


def _last_row(path: Path) -> dict[str, float]:
    rows = list(csv.DictReader(path.open()))
    if not rows:
        return {}
    return {k: float(v) for k, v in rows[-1].items() if v not in ("", None) and k not in ("step", "tokens")}


def prompt_answer_lengths(cfg: TrainConfig, tokenizer: Any) -> list[int]:
    """Token lengths of every training example (for choosing `context_length`)."""
    rows = read_rows(cfg.data_dir, "train")
    return [len(tokenizer("".join(fmt.build_example(r, with_ir=cfg.with_ir)), add_special_tokens=False)["input_ids"])
            for r in rows]
