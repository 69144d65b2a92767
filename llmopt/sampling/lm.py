"""A loaded pass-list model and a prefix-tree decoder that reuses the key/value cache.

`PassListLM` holds (model, tokenizer, grammar) and turns an IR into prompt token ids.
`TreeDecoder` answers "log-probabilities of the next token after prompt + these answer tokens"
for any prefix, which is all greedy, nucleus and Priority Sampling need:

* the prompt is encoded once; its KV cache is kept,
* one working KV cache is cropped back to the longest common prefix with the last decoded
  sequence and only the new tokens are run (samples of a search tree share their prefixes),
* the next-token distribution of every visited tree node is memoized (a node is expanded once).

`reuse_cache=False` recomputes prompt + prefix from scratch for every query: the reference the
tests compare against.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from llmopt.model import format as fmt
from llmopt.model.tokenizer import special_token_id, stop_token_ids
from llmopt.sampling.base import PromptTooLongError
from llmopt.sampling.config import DEFAULTS, PREFILL_DTYPES
from llmopt.sampling.grammar import PassListGrammar


def crop_cache(cache: Any, length: int) -> None:
    """Shorten a HF cache to its first `length` positions (negative argument: works on HF 4.4x and 5.x)."""
    excess = cache.get_seq_length() - length
    if excess > 0:
        cache.crop(-excess)


def native_bf16() -> bool:
    """True when this CPU computes bfloat16 natively (oneDNN's check: AVX512-BF16 or AMX)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch build without oneDNN
        return False


def _prefill_copy(model: Any, prefill_dtype: str) -> Any:
    """The model that encodes prompts when it is not `model` itself (None: `model` does).

    `prefill_dtype` (one of config.PREFILL_DTYPES): "bfloat16" encodes the prompt with a bfloat16 copy of
    the weights (1.6x faster on a CPU with native bf16, e.g. AVX512-BF16; top log-probabilities move by
    ~0.01) and the answer is decoded in float32 from a float32 copy of its cache (`TreeDecoder`): a decode
    step is one token, and bf16 made those slower.  "auto": bfloat16 where the CPU computes it natively and
    the model is the torch engine's float32 one, else "float32" (no copy)."""
    from llmopt.model.llama import LlamaForInference

    if prefill_dtype not in PREFILL_DTYPES:
        raise ValueError(f"unknown prefill dtype {prefill_dtype!r}: choose one of {', '.join(PREFILL_DTYPES)}")
    torch_engine = isinstance(model, LlamaForInference) and model.lm_head.weight.dtype == torch.float32
    quantized = any(type(m).__module__.startswith("torch.ao.nn.quantized") for m in model.modules())  # --int8
    if prefill_dtype == "auto":
        prefill_dtype = "bfloat16" if torch_engine and not quantized and native_bf16() else "float32"
    if prefill_dtype == "float32":
        return None
    if not torch_engine or quantized:
        raise ValueError("a bfloat16 prefill needs the float32 model of the torch engine (not transformers, not --int8)")
    import copy

    return copy.deepcopy(model).to(torch.bfloat16)


class PassListLM:
    """A causal LM that answers pass lists, with its tokenizer and the pass-list grammar.

    `passes` defaults to the vocabulary recorded in the model's `llmopt.json` (or the passes the
    tokenizer knows).  `max_passes` bounds the length of a generated pass list.
    """

    def __init__(self, model: Any, tokenizer: Any, passes: Sequence[str] | None = None, *,
                 max_passes: int = DEFAULTS.max_passes, context_length: int | None = None, path: str | None = None,
                 prefill_dtype: str = "float32"):
        self.model = model.eval()
        self.prefill_model = _prefill_copy(model, prefill_dtype)
        self.tokenizer = tokenizer
        self.path = path
        if passes is None:
            from llmopt.model.tokenizer import ModelMeta

            passes = ModelMeta.load(path).passes if path else []
        vocab_size = int(model.get_output_embeddings().weight.shape[0])
        self.grammar = PassListGrammar(tokenizer, list(passes), vocab_size=vocab_size, max_passes=max_passes)
        self.passes = list(passes)
        self.max_passes = max_passes
        self.context_length = context_length or int(getattr(model.config, "max_position_embeddings", 2048))
        self.open_id = special_token_id(tokenizer, fmt.PASSES_OPEN)
        self.stop_ids = set(stop_token_ids(tokenizer, "passes"))

    @classmethod
    def load(cls, path: str | Path | None = None, *, max_passes: int = DEFAULTS.max_passes, threads: int | None = None,
             engine: str = "auto", int8: bool = False, prefill_dtype: str = "float32") -> PassListLM:
        """Load a model directory (default: the shipped model); raises ModelNotFoundError.

        `engine` picks the inference code (`llmopt.model.loading.load_model`): by default the
        plain-PyTorch Llama, which starts ~2 s faster than `transformers` and gives the same logits.

        `threads` (default 1, or $LLMOPT_TORCH_THREADS) sets torch's intra-op threads: the compile
        workers need the other cores, and with oversubscribed cores a small model ran 7-20x slower
        on 2 threads than on 1 (docs/benchmarks.md, Prediction).  `int8`: dynamic int8 quantization of the
        decoder's linear layers (`llmopt.model.loading.quantize_int8`).  `prefill_dtype`: see `_prefill_copy`.

        An ensemble -- several directories joined by commas ("a,b"), or an ensemble directory
        (`llmopt.model.loading.ensemble_spec`) -- loads an `llmopt.sampling.ensemble.EnsembleLM`: the members
        decode as one, through the mixture of their next-token distributions.
        """
        import os

        from llmopt.model.loading import EnsembleSpec, default_model_dir, ensemble_spec, load_meta, load_model

        directory = str(path) if path is not None else str(default_model_dir())
        spec = (EnsembleSpec([Path(p) for p in directory.split(",") if p]) if "," in directory
                else ensemble_spec(directory))
        if spec:
            from llmopt.sampling.ensemble import EnsembleLM

            lm = EnsembleLM.load_members([str(p) for p in spec.members], spec.weights, spec.gate,
                                         max_passes=max_passes, threads=threads, engine=engine, int8=int8,
                                         prefill_dtype=prefill_dtype)
            lm.path = directory  # an ensemble directory is named by its own path
            return lm
        torch.set_num_threads(threads or int(os.environ.get("LLMOPT_TORCH_THREADS", "1")))
        meta = load_meta(path)
        model, tokenizer = load_model(path, engine=engine, int8=int8)
        ctx = meta.extra.get("context_length")
        return cls(model, tokenizer, meta.passes, max_passes=max_passes, context_length=ctx, path=directory,
                   prefill_dtype=prefill_dtype)

    def restricted_to(self, lists: Sequence[Sequence[str]]) -> PassListLM:
        """This model (shared, not copied) with its grammar narrowed to `lists` (`ListSetGrammar`)."""
        import copy

        from llmopt.sampling.grammar import ListSetGrammar

        narrowed = copy.copy(self)
        narrowed.grammar = ListSetGrammar(self.tokenizer, self.passes, lists, vocab_size=self.grammar.vocab_size,
                                          max_passes=self.max_passes)
        return narrowed

    def prompt_ids(self, prompt: str) -> list[int]:
        """Token ids of `prompt` (text up to `<answer>` or a verdict) followed by `<passes>`.

        Raises PromptTooLongError when prompt + the longest pass list exceed the context.
        """
        ids = self.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        ids = ids + [self.open_id]
        if len(ids) + self.max_passes + 1 > self.context_length:
            raise PromptTooLongError(f"prompt of {len(ids)} tokens does not fit the model context "
                                     f"({self.context_length} tokens)")
        return ids

    def decoder(self, ir: str | None = None, *, prompt: str | None = None, reuse_cache: bool = True
                ) -> TreeDecoder:
        """A `TreeDecoder` for the prompt of `ir` (or an explicit prompt text, e.g. with feedback history)."""
        if prompt is None:
            prompt = fmt.build_prompt(ir or "")
        return self.decoder_for_ids(self.prompt_ids(prompt), reuse_cache=reuse_cache)

    def decoder_for_ids(self, ids: list[int], *, reuse_cache: bool = True) -> TreeDecoder:
        """A `TreeDecoder` for prompt token ids that already end with `<passes>` (`prompt_ids`'s output: a
        trainer holding tokenized examples, `training.distill`, skips the detokenize round trip)."""
        return TreeDecoder(self, ids, reuse_cache=reuse_cache)


class TreeDecoder:
    """Next-token log-probabilities for any answer prefix of one prompt, sharing KV caches.

    `tokens_run` counts the tokens the model processed (prompt included): the cost of a decode.
    """

    def __init__(self, lm: PassListLM, prompt_ids: list[int], *, reuse_cache: bool = True):
        self.lm = lm
        self.prompt_ids = prompt_ids
        self.reuse_cache = reuse_cache
        self.memo: dict[tuple[int, ...], torch.Tensor] = {}
        self.tokens_run = 0
        self._cache: Any = None
        self._fed: list[int] = []  # answer tokens currently in the working cache (after the prompt)
        if reuse_cache:
            self._encode_prompt()

    @torch.no_grad()
    def _forward(self, ids: list[int], cache: Any, use_cache: bool = True, keep: int = 0,
                 model: Any = None) -> tuple[torch.Tensor, Any]:
        """logits (len(ids), vocab) for `ids` appended to `cache` (None: from scratch); only the last
        `keep` rows when keep > 0 (both engines take `logits_to_keep`).  `model`: default the LM's."""
        input_ids = torch.tensor([ids], dtype=torch.long)
        out = (model or self.lm.model)(input_ids=input_ids, past_key_values=cache, use_cache=use_cache,
                                       logits_to_keep=keep)
        self.tokens_run += len(ids)
        return out.logits[0].float(), out.past_key_values

    def _encode_prompt(self) -> None:
        prefill = self.lm.prefill_model
        logits, self._cache = self._forward(self.prompt_ids, None, keep=1, model=prefill)
        if prefill is not None:  # decode in the model's own dtype (PREFILL_DTYPES)
            self._cache = self._cache.astype(self.lm.model.lm_head.weight.dtype)
        self.memo[()] = torch.log_softmax(logits[-1], dim=-1)

    def logprobs(self, tokens: Sequence[int]) -> torch.Tensor:
        """log p(next token | prompt, `tokens`) as a float tensor of shape (vocab,)."""
        key = tuple(tokens)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        if not self.reuse_cache:
            logits, _ = self._forward(self.prompt_ids + list(tokens), None, use_cache=False, keep=1)
            self.memo[key] = torch.log_softmax(logits[-1], dim=-1)
            return self.memo[key]
        # Longest common prefix with what the working cache holds; run only the rest.
        lcp = 0
        while lcp < min(len(self._fed), len(key)) and self._fed[lcp] == key[lcp]:
            lcp += 1
        lcp = min(lcp, len(key) - 1)  # at least one token must run to get its logits
        crop_cache(self._cache, len(self.prompt_ids) + lcp)
        logits, self._cache = self._forward(list(key[lcp:]), self._cache)
        self._fed = list(key)
        for j in range(len(key) - lcp):  # memoize every node on the way
            self.memo.setdefault(key[:lcp + j + 1], torch.log_softmax(logits[j], dim=-1))
        return self.memo[key]

    def prefetch(self, prefixes: Sequence[Sequence[int]]) -> None:
        """Memoize the rows of `prefixes` in one forward where that is possible: those not memoized yet whose
        parent (all but the last token) is on the path the working cache holds, with a model that scores
        branches (`llmopt.model.llama.LlamaForInference.score_branches`); the others are left to `logprobs`.
        Rows match `logprobs`' up to float rounding (other matrix shapes)."""
        score = getattr(self.lm.model, "score_branches", None)
        if score is None or not self.reuse_cache or self._cache is None:
            return
        wanted = []
        for prefix in dict.fromkeys(tuple(p) for p in prefixes):
            parent = prefix[:-1]
            if prefix and prefix not in self.memo and list(parent) == self._fed[:len(parent)]:
                wanted.append(prefix)
        if len(wanted) < 2:  # one branch: `logprobs` feeds it as cheaply and keeps its keys
            return
        start = len(self.prompt_ids)  # the cache holds the prompt and `_fed`, as `logprobs` left it
        logits = score([p[-1] for p in wanted], [start + len(p) - 1 for p in wanted], self._cache)
        self.tokens_run += len(wanted)
        for prefix, row in zip(wanted, logits, strict=True):
            self.memo[prefix] = torch.log_softmax(row, dim=-1)

    def release_cache(self) -> None:
        """Drop the KV cache (megabytes per prompt), keep the memoized rows: a decoder kept for later
        questions (a polish after a batch is verified) then answers new prefixes with a full forward."""
        self._cache, self._fed, self.reuse_cache = None, [], False

    def masked_logprobs(self, tokens: Sequence[int], grammar: bool = True) -> torch.Tensor:
        """`logprobs(tokens)` with grammar-illegal tokens at -inf (renormalized over legal tokens)."""
        lp = self.logprobs(tokens)
        if not grammar:
            return lp
        legal = self.lm.grammar.mask(tokens)
        width = min(lp.shape[0], legal.shape[0])
        masked = torch.full_like(lp, float("-inf"))
        masked[:width] = lp[:width].masked_fill(~legal[:width], float("-inf"))
        return torch.log_softmax(masked, dim=-1)

    def finished(self, tokens: Sequence[int]) -> bool:
        """True when `tokens` ends the pass list (a stop token) or reached the length limit."""
        return bool(tokens) and (tokens[-1] in self.lm.stop_ids or len(tokens) > self.lm.max_passes)

    def text(self, tokens: Sequence[int]) -> str:
        """The answer text for `tokens`: `<passes>` + decoded tokens."""
        return fmt.PASSES_OPEN + self.lm.tokenizer.decode(list(tokens), skip_special_tokens=False)

    def passes(self, tokens: Sequence[int]) -> list[str]:
        """The pass list of a generated token sequence (non-pass tokens dropped; thesis: no-regex cleanup)."""
        return self.lm.grammar.passes_of(tokens)
