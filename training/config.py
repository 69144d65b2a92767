"""Training configuration: plain values with defaults, overridden by a JSON / YAML / TOML file.

Every key of `TrainConfig` may appear at the top level of the file; `lora` is a nested table.
Unknown keys are an error (a typo should not silently train the wrong thing).  Relative paths
are resolved against the current directory, so configs work from the repository root.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any


@dataclass
class LoraConfig:
    enabled: bool = False
    r: int = 16
    alpha: int = 32
    dropout: float = 0.05
    target_modules: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    # Trained in full when new tokens had to be added to a foreign checkpoint's vocabulary.
    modules_to_save: list[str] = field(default_factory=lambda: ["embed_tokens", "lm_head"])


@dataclass
class TrainConfig:
    # data and output
    data_dir: str = "data"
    out_dir: str = "runs/tiny"
    max_train_examples: int | None = None
    with_ir: bool = True                  # False: answer without optimized IR (thesis Fig. 4.18 ablation)
    target_policy: str = "best"           # best | frequent | random | beyond_oz: which tying list a row teaches
    keep_unimproved: float = 1.0          # fraction of the train rows whose best is -Oz's count that are kept
    set_members: int = 0                  # > 0: teach up to this many good lists per function with the set loss
                                          # (training/set_loss.py; needs DATA/lists-train.json.gz); 0: one label
    prompt_loss_weight: float = 0.0       # set loss: + this x the next-token loss over the prompt's IR (an
                                          # auxiliary task; set_loss.prompt_lm_loss); 0: answer tokens only
    set_weighting: str = "function"       # set loss: "function" (every function alike), "saving" (each function by
                                          # the instructions its best list saves over -Oz, as the metric counts), or
                                          # "sqrt_saving" (in between)
    set_coverage: int = 1                 # set loss: score k samples, -log(1 - (1 - q)^k) (set_loss.log_coverage):
                                          # mass stops piling on covered functions; 1: one sample, -log q
    extra_matrices: str = ""              # set loss: named list matrices (data_pipeline.list_matrix --name), comma-
                                          # separated, merged with each dataset's first: e.g. "frequent"
    distill_from: str | None = None       # set loss: a teacher model or ensemble directory; + distill_weight x the
    distill_weight: float = 1.0           # mean KL from its next-token distributions along the members (distill.py)
    # tokenizer: an existing llmopt tokenizer/model dir, or None to train one into out_dir/tokenizer
    tokenizer: str | None = None
    tokenizer_vocab_size: int = 4096
    # model: a preset trained from scratch, or init_from an HF causal-LM checkpoint (full or LoRA fine-tune)
    model_preset: str = "tiny"
    model_overrides: dict[str, Any] = field(default_factory=dict)  # LlamaConfig values replacing the preset's
    context_length: int = 1024
    init_from: str | None = None
    lora: LoraConfig = field(default_factory=LoraConfig)
    # optimisation (thesis §4.3.3: AdamW 0.9/0.95, cosine, warm-up, final LR = peak/10)
    batch_size: int = 8
    grad_accum: int = 1
    max_steps: int = 2000
    max_minutes: float = 0                # wall-clock cap of one train() call, set-up included (0 = none):
                                          # stops like max_steps (checkpoint, export); the GPU machine's 10-min calls
    lr_schedule: str = "steps"            # "steps": cosine to max_steps; "minutes": cosine to whichever comes first,
                                          # max_steps or max_minutes (a one-call GPU run whose step rate is unknown)
    lr: float = 1e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 100
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    mixed_precision: str = "no"           # accelerate: "no", "fp16", "bf16"
    seed: int = 0
    # logging, checkpoints, validation
    log_interval: int = 10
    checkpoint_interval: int = 100
    eval_interval: int = 250
    val_functions: int = 32               # held-out functions decoded greedily per validation
    val_batch_size: int = 8
    val_max_new_tokens: int = 768
    val_generate_ir: bool = True          # False: stop after the counts (much faster)

    def __post_init__(self) -> None:
        from training.set_loss import SET_WEIGHTINGS
        from training.targets import POLICIES

        if self.target_policy not in POLICIES:
            raise ValueError(f"target_policy must be one of {', '.join(POLICIES)}, got {self.target_policy!r}")
        if not 0.0 < self.keep_unimproved <= 1.0:
            raise ValueError(f"keep_unimproved must be in (0, 1], got {self.keep_unimproved}")
        if self.max_minutes < 0:
            raise ValueError(f"max_minutes must be >= 0 (0 = no cap), got {self.max_minutes}")
        if self.lr_schedule not in ("steps", "minutes"):
            raise ValueError(f"lr_schedule must be 'steps' or 'minutes', got {self.lr_schedule!r}")
        if self.lr_schedule == "minutes" and self.max_minutes <= 0:
            raise ValueError("lr_schedule='minutes' needs max_minutes > 0 (the time the cosine decays over)")
        if self.prompt_loss_weight < 0:
            raise ValueError(f"prompt_loss_weight must be >= 0, got {self.prompt_loss_weight}")
        if self.prompt_loss_weight > 0 and not self.set_members:
            raise ValueError("prompt_loss_weight needs the set loss (set_members > 0)")
        if self.set_members < 0:
            raise ValueError(f"set_members must be >= 0 (0 = one label per function), got {self.set_members}")
        if self.set_coverage < 1:
            raise ValueError(f"set_coverage must be >= 1 samples, got {self.set_coverage}")
        if self.set_coverage > 1 and not self.set_members:
            raise ValueError("set_coverage needs the set loss (set_members > 0)")
        if self.distill_from and not self.set_members:
            raise ValueError("distill_from needs the set loss (set_members > 0): its members are the taught positions")
        if self.distill_weight < 0:
            raise ValueError(f"distill_weight must be >= 0, got {self.distill_weight}")
        if self.extra_matrices and not self.set_members:
            raise ValueError("extra_matrices needs the set loss (set_members > 0)")
        if self.set_weighting not in SET_WEIGHTINGS:
            raise ValueError(f"set_weighting must be one of {', '.join(SET_WEIGHTINGS)}, got {self.set_weighting!r}")
        if (self.target_policy != "best" or self.set_members) and self.with_ir:
            raise ValueError(f"target_policy={self.target_policy} (or set_members) needs with_ir=false: the "
                             "dataset holds the optimized IR of the best list only")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _read(path: Path) -> dict[str, Any]:
    text = path.read_text()
    if path.suffix == ".json":
        return json.loads(text)
    if path.suffix in (".yaml", ".yml"):
        import yaml

        return yaml.safe_load(text) or {}
    if path.suffix == ".toml":
        import tomllib

        return tomllib.loads(text)
    raise ValueError(f"{path}: unknown config format (use .json, .yaml or .toml)")


def config_from_dict(values: dict[str, Any]) -> TrainConfig:
    values = dict(values)
    values.pop("_comment", None)
    known = {f.name for f in fields(TrainConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown config key(s): {', '.join(unknown)} (see training/config.py)")
    lora = values.pop("lora", None) or {}
    lora_known = {f.name for f in fields(LoraConfig)}
    if set(lora) - lora_known:
        raise ValueError(f"unknown lora key(s): {', '.join(sorted(set(lora) - lora_known))}")
    return TrainConfig(**values, lora=LoraConfig(**lora))


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """The config in `path` (JSON/YAML/TOML) with `overrides` (e.g. from `--set key=value`) applied."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"config file {path} not found (examples: training/configs/*.json)")
    values = _read(path)
    values.update(overrides or {})
    return config_from_dict(values)


def parse_override(text: str) -> tuple[str, Any]:
    """`key=value` with value parsed as JSON when it can be (`max_steps=10`, `lora={"enabled": true}`)."""
    if "=" not in text:
        raise ValueError(f"--set expects key=value, got {text!r}")
    key, raw = text.split("=", 1)
    try:
        return key.strip(), json.loads(raw)
    except json.JSONDecodeError:
        return key.strip(), raw
