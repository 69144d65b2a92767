"""A plain-PyTorch Llama decoder for inference, reading the `transformers` export directly.

Why: importing `transformers`' model code costs ~2.4 s, more than everything else a cold
`llmopt predict` does (docs/benchmarks.md, Prediction).  Inference needs only the forward pass,
so this module re-implements `LlamaForCausalLM.forward` (RMSNorm, rotary embeddings, grouped-query
attention, SiLU MLP) over the same `config.json` + `model.safetensors`, with a preallocated KV cache
that crops in O(1) -- what the prefix-tree decoder of `llmopt.sampling.lm` does all the time.
Training, LoRA and anything this module does not support use `transformers` (`supports()` says which).

It answers the calls llmopt makes of a HF model: `model(input_ids=, past_key_values=, use_cache=)`
returning `.logits` / `.past_key_values`, greedy `generate(...)`, `get_output_embeddings()`,
`config.max_position_embeddings`.  `tests/test_llama.py` checks logits and samples against
`transformers` on the same weights.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

WEIGHTS_FILE = "model.safetensors"


def _rope_theta(cfg: dict) -> float | None:
    """The rotary base for default (unscaled) RoPE, or None if the config asks for another kind."""
    params = cfg.get("rope_parameters") or {}
    scaling = cfg.get("rope_scaling") or {}
    kind = params.get("rope_type", scaling.get("rope_type", scaling.get("type", "default")))
    if kind != "default":
        return None
    return float(params.get("rope_theta", cfg.get("rope_theta", 10000.0)))


def supports(directory: str | Path) -> str | None:
    """None when `directory` can be run by this module, else the reason it cannot."""
    directory = Path(directory)
    if not (directory / WEIGHTS_FILE).exists():
        return f"no {WEIGHTS_FILE}"
    cfg = json.loads((directory / "config.json").read_text())
    if cfg.get("model_type") != "llama":
        return f"model_type {cfg.get('model_type')!r} is not llama"
    if cfg.get("hidden_act", "silu") != "silu":
        return f"activation {cfg.get('hidden_act')!r}"
    if _rope_theta(cfg) is None:
        return "scaled rotary embeddings"
    if cfg.get("pretraining_tp", 1) != 1:
        return "pretraining_tp > 1"
    return None


class KVCache:
    """Keys/values of every layer in buffers sized for the whole context; `crop` just moves the end."""

    def __init__(self, layers: int, kv_heads: int, head_dim: int, capacity: int, dtype: torch.dtype):
        shape = (1, kv_heads, capacity, head_dim)
        self.keys = [torch.empty(shape, dtype=dtype) for _ in range(layers)]
        self.values = [torch.empty(shape, dtype=dtype) for _ in range(layers)]
        self.length = 0

    def get_seq_length(self) -> int:
        return self.length

    def crop(self, length: int) -> None:
        """Keep the first `length` positions (negative: drop that many from the end, like HF's cache)."""
        self.length = max(0, self.length + length if length < 0 else min(length, self.length))

    def astype(self, dtype: torch.dtype) -> KVCache:
        """A copy in `dtype` (same capacity): a prompt prefilled in bfloat16 is then decoded in float32."""
        layers, (_, kv_heads, capacity, head_dim) = len(self.keys), self.keys[0].shape
        out = KVCache(layers, kv_heads, head_dim, capacity, dtype)
        for mine, theirs in ((self.keys, out.keys), (self.values, out.values)):
            for src, dst in zip(mine, theirs, strict=True):
                dst[:, :, :self.length] = src[:, :, :self.length]
        out.length = self.length
        return out

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor, start: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Store new k/v at positions start.. and return all keys/values up to them."""
        end = start + k.shape[2]
        self.keys[layer][:, :, start:end] = k
        self.values[layer][:, :, start:end] = v
        return self.keys[layer][:, :, :end], self.values[layer][:, :, :end]


@dataclass
class Output:
    logits: torch.Tensor
    past_key_values: KVCache | None


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    def __init__(self, c: SimpleNamespace):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        bias = c.attention_bias
        self.q_proj = nn.Linear(c.hidden_size, self.heads * self.head_dim, bias=bias)
        self.k_proj = nn.Linear(c.hidden_size, self.kv_heads * self.head_dim, bias=bias)
        self.v_proj = nn.Linear(c.hidden_size, self.kv_heads * self.head_dim, bias=bias)
        self.o_proj = nn.Linear(self.heads * self.head_dim, c.hidden_size, bias=bias)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layer: int,
                cache: KVCache | None, start: int, mask: torch.Tensor | None = None) -> torch.Tensor:
        """`mask` (new tokens x cached + new positions, True = may attend): replaces the causal rule
        (`LlamaForInference.score_branches`)."""
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        if cache is not None:
            k, v = cache.append(layer, k, v, start)
        if self.kv_heads != self.heads:
            k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
            v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
        if mask is not None:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        elif start == 0 or s == 1:  # a single new query sees everything cached
            out = F.scaled_dot_product_attention(q, k, v, is_causal=start == 0 and s > 1)
        else:  # new queries see every cached position and the new ones causally
            total = k.shape[2]
            mask = torch.ones(s, total, dtype=torch.bool).tril(diagonal=total - s)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.o_proj(out.transpose(1, 2).reshape(b, s, self.heads * self.head_dim))


class MLP(nn.Module):
    def __init__(self, c: SimpleNamespace):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=c.mlp_bias)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=c.mlp_bias)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=c.mlp_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, c: SimpleNamespace):
        super().__init__()
        self.self_attn = Attention(c)
        self.mlp = MLP(c)
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)


class _Body(nn.Module):
    """The `model.` part of the state dict (names match the HF export)."""

    def __init__(self, c: SimpleNamespace):
        super().__init__()
        # An explicit (empty) weight skips nn.Embedding's normal_ init: under the meta device of
        # `from_pretrained` that op imports torch._dynamo, 1.4 s of a cold `llmopt predict`.
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size,
                                         _weight=torch.empty(c.vocab_size, c.hidden_size))
        self.layers = nn.ModuleList(DecoderLayer(c) for _ in range(c.num_hidden_layers))
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)


def _config(cfg: dict) -> SimpleNamespace:
    heads = cfg["num_attention_heads"]
    return SimpleNamespace(
        vocab_size=cfg["vocab_size"], hidden_size=cfg["hidden_size"], intermediate_size=cfg["intermediate_size"],
        num_hidden_layers=cfg["num_hidden_layers"], num_attention_heads=heads,
        num_key_value_heads=cfg.get("num_key_value_heads") or heads,
        head_dim=cfg.get("head_dim") or cfg["hidden_size"] // heads, rms_norm_eps=cfg.get("rms_norm_eps", 1e-6),
        max_position_embeddings=cfg.get("max_position_embeddings", 2048), rope_theta=_rope_theta(cfg),
        attention_bias=cfg.get("attention_bias", False), mlp_bias=cfg.get("mlp_bias", False),
        tie_word_embeddings=cfg.get("tie_word_embeddings", False), eos_token_id=cfg.get("eos_token_id"),
        pad_token_id=cfg.get("pad_token_id"))


class LlamaForInference(nn.Module):
    """Llama causal LM (inference only) with the parameter names of `transformers`' LlamaForCausalLM."""

    def __init__(self, config: SimpleNamespace):
        super().__init__()
        self.config = config
        self.model = _Body(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        dim = config.head_dim
        # On the CPU even under `from_pretrained`'s meta device: arange on meta imports torch._dynamo (~1 s).
        steps = torch.arange(0, dim, 2, dtype=torch.float32, device="cpu")
        self.inv_freq = 1.0 / (config.rope_theta ** (steps / dim))

    @classmethod
    def from_pretrained(cls, directory: str | Path) -> LlamaForInference:
        from safetensors.torch import load_file

        directory = Path(directory)
        reason = supports(directory)
        if reason:
            raise ValueError(f"{directory}: cannot run without transformers ({reason})")
        config = _config(json.loads((directory / "config.json").read_text()))
        with torch.device("meta"):  # no random initialisation of weights the file replaces (~half the load)
            model = cls(config)
        state = load_file(str(directory / WEIGHTS_FILE))
        if model.config.tie_word_embeddings or "lm_head.weight" not in state:
            state["lm_head.weight"] = state["model.embed_tokens.weight"]
        missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
        if missing or unexpected:
            raise ValueError(f"{directory}: weights do not match the config (missing {missing[:3]}, "
                             f"unexpected {unexpected[:3]})")
        return model.eval()

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def new_cache(self) -> KVCache:
        c = self.config
        return KVCache(c.num_hidden_layers, c.num_key_value_heads, c.head_dim, c.max_position_embeddings,
                       self.lm_head.weight.dtype)

    def _rotary(self, start: int, length: int, positions: list[int] | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """cos, sin at positions start..start+length-1, or at explicit `positions`."""
        pos = (torch.arange(start, start + length, dtype=torch.float32) if positions is None
               else torch.tensor(positions, dtype=torch.float32))
        freqs = torch.outer(pos, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        dtype = self.lm_head.weight.dtype
        return emb.cos().to(dtype), emb.sin().to(dtype)

    @torch.no_grad()
    def forward(self, input_ids: torch.Tensor, past_key_values: KVCache | None = None, use_cache: bool = True,
                logits_to_keep: int = 0, **_: Any) -> Output:
        """Logits for `input_ids` (batch 1) appended after what `past_key_values` holds; for the last
        `logits_to_keep` positions only when it is > 0 (as in `transformers`: a prompt needs one row,
        and the output head over every prompt token was ~23% of a base model's prefill)."""
        if input_ids.shape[0] != 1:
            raise ValueError("LlamaForInference runs one sequence at a time")
        cache = past_key_values if past_key_values is not None else (self.new_cache() if use_cache else None)
        start = cache.length if cache is not None else 0
        length = input_ids.shape[1]
        if start + length > self.config.max_position_embeddings:
            raise ValueError(f"{start + length} tokens exceed the context of {self.config.max_position_embeddings}")
        cos, sin = self._rotary(start, length)
        h = self._layers(input_ids, cos, sin, cache, start)
        if cache is not None:
            cache.length = start + length
        if logits_to_keep > 0:
            h = h[:, -logits_to_keep:]
        return Output(self.lm_head(self.model.norm(h)), cache)

    def _layers(self, input_ids: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, cache: KVCache | None,
                start: int, mask: torch.Tensor | None = None) -> torch.Tensor:
        h = self.model.embed_tokens(input_ids)
        for i, layer in enumerate(self.model.layers):
            h = h + layer.self_attn(layer.input_layernorm(h), cos, sin, i, cache, start, mask)
            h = h + layer.mlp(layer.post_attention_layernorm(h))
        return h

    @torch.no_grad()
    def score_branches(self, tokens: list[int], depths: list[int], cache: KVCache) -> torch.Tensor:
        """Logits (len(tokens), vocab) of one-token branches off the sequence `cache` holds, in one forward.

        Token i continues the cache's first `depths[i]` positions (it sits at position depths[i] and sees
        only those and itself), as if the cache had been cropped there and the token fed alone.  Why: a
        decode step's cost is reading the weights, nearly the same for 1 or 8 tokens (docs/benchmarks.md,
        "The cascade"), and Priority Sampling asks for many such siblings.  The cache keeps its length and
        contents: the branches' keys are written past its end and forgotten.
        """
        start, count = cache.length, len(tokens)
        if any(not 0 < d <= start for d in depths) or start + count > self.config.max_position_embeddings:
            raise ValueError("every branch must continue a non-empty prefix of the cache, within the context")
        cos, sin = self._rotary(0, count, positions=depths)
        mask = torch.zeros(count, start + count, dtype=torch.bool)
        for i, depth in enumerate(depths):
            mask[i, :depth] = True
            mask[i, start + i] = True
        h = self._layers(torch.tensor([tokens], dtype=torch.long), cos, sin, cache, start, mask)
        cache.length = start  # the branches' keys past the end are dropped
        return self.lm_head(self.model.norm(h))[0].float()

    @torch.no_grad()
    def generate(self, input_ids: torch.Tensor, *, max_new_tokens: int, eos_token_id: int | list[int] | None = None,
                 do_sample: bool = False, **_: Any) -> torch.Tensor:
        """Greedy continuation (batch 1) until an `eos_token_id` or `max_new_tokens`; returns prompt + new ids."""
        if do_sample:
            raise ValueError("LlamaForInference.generate is greedy only")
        stops = {eos_token_id} if isinstance(eos_token_id, int) else set(eos_token_id or [])
        ids = input_ids[0].tolist()
        room = self.config.max_position_embeddings - len(ids)
        out = self.forward(input_ids)
        new: list[int] = []
        for _ in range(max(0, min(max_new_tokens, room))):
            token = int(out.logits[0, -1].argmax())
            new.append(token)
            if token in stops or len(new) == min(max_new_tokens, room):
                break
            out = self.forward(torch.tensor([[token]]), past_key_values=out.past_key_values)
        return torch.tensor([ids + new], dtype=torch.long)
