"""Loading the tokenizer saved with a model, and the pass <-> token-id mapping.

A model directory holds a Hugging Face fast tokenizer (`tokenizer.json`, loadable with
`transformers.PreTrainedTokenizerFast.from_pretrained(dir)`) and `llmopt.json`, the metadata
llmopt needs: the pass vocabulary (each pass one token, see `format.pass_token`), the LLVM major
version of the data, and the format version.  Training lives in `training/tokenizer.py`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from llmopt.model import format as fmt

META_FILE = "llmopt.json"


@dataclass
class ModelMeta:
    """What `llmopt.json` records about a model directory."""

    passes: list[str]
    llvm_version: int | None = None
    format_version: int = fmt.FORMAT_VERSION
    with_ir: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def save(self, directory: str | Path) -> None:
        path = Path(directory) / META_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1) + "\n")
        tmp.replace(path)

    @classmethod
    def load(cls, directory: str | Path) -> ModelMeta:
        path = Path(directory) / META_FILE
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: not an llmopt model/tokenizer directory")
        data = json.loads(path.read_text())
        known = {k: data.pop(k) for k in list(data) if k in cls.__dataclass_fields__}
        known.setdefault("extra", {}).update(data)
        return cls(**known)


def load_tokenizer(directory: str | Path) -> Any:
    """The `PreTrainedTokenizerFast` saved in `directory` (an ensemble directory: its members' shared one)."""
    from transformers import PreTrainedTokenizerFast

    from llmopt.model.loading import single_model_dir

    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(single_model_dir(directory)))
    tokenizer.clean_up_tokenization_spaces = False  # IR spacing must survive decode
    return tokenizer


class InferenceTokenizer:
    """`tokenizer.json` through the `tokenizers` library alone (no `transformers` import: ~2 s faster).

    Answers the calls inference makes of a `PreTrainedTokenizerFast` -- `tok(text,
    add_special_tokens=False)["input_ids"]`, `decode`, `convert_tokens_to_ids`, `get_vocab`, `len`, `pad_token_id`,
    `unk_token_id` -- with the same ids (tests/test_llama.py compares them on IR).
    """

    def __init__(self, directory: str | Path):
        from tokenizers import Tokenizer

        from llmopt.model.loading import single_model_dir

        directory = single_model_dir(directory)  # an ensemble directory: its members' shared tokenizer
        self._tok = Tokenizer.from_file(str(directory / "tokenizer.json"))
        config_path = directory / "tokenizer_config.json"
        config = json.loads(config_path.read_text()) if config_path.exists() else {}
        self.pad_token_id = self._id(config.get("pad_token"))
        self.unk_token_id = self._id(config.get("unk_token"))
        self.eos_token_id = self._id(config.get("eos_token"))

    def _id(self, token: Any) -> int | None:
        if isinstance(token, dict):  # older configs store AddedToken objects
            token = token.get("content")
        return self._tok.token_to_id(token) if token else None

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        return {"input_ids": self._tok.encode(text, add_special_tokens=add_special_tokens).ids}

    def decode(self, ids: Any, skip_special_tokens: bool = False) -> str:
        ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
        return self._tok.decode(ids, skip_special_tokens=skip_special_tokens)

    def convert_tokens_to_ids(self, token: str) -> int | None:
        token_id = self._tok.token_to_id(token)
        return self.unk_token_id if token_id is None else token_id

    def __len__(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    def get_vocab(self) -> dict[str, int]:
        """token -> id, added tokens included (models that decode together must agree on it)."""
        return self._tok.get_vocab(with_added_tokens=True)


def pass_token_ids(tokenizer: Any, passes: list[str]) -> dict[str, int]:
    """{pass name: token id}; raises ValueError if a pass is not a single token of `tokenizer`."""
    ids = {}
    for name in passes:
        token = fmt.pass_token(name)
        encoded = tokenizer(token, add_special_tokens=False)["input_ids"]
        if len(encoded) != 1:
            raise ValueError(f"pass {name!r} is not one token of this tokenizer ({len(encoded)} tokens)")
        ids[name] = encoded[0]
    return ids


def special_token_id(tokenizer: Any, token: str) -> int:
    """The id of one format tag (e.g. `format.PASSES_CLOSE`)."""
    token_id = tokenizer.convert_tokens_to_ids(token)
    if token_id is None or token_id == tokenizer.unk_token_id:
        raise ValueError(f"{token!r} is not a token of this tokenizer")
    return token_id


def stop_token_ids(tokenizer: Any, stop_after: fmt.StopAfter = "passes") -> list[int]:
    """Token ids at which generation stops (`eos_token_id` for `generate`): the section end and `</s>`."""
    return sorted({special_token_id(tokenizer, fmt.stop_token(stop_after)), special_token_id(tokenizer, fmt.EOS)})
