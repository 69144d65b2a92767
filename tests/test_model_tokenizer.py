"""Tokenizer: trained on real normalized IR, lossless, every pass and format tag one token."""

import pytest
from transformers import PreTrainedTokenizerFast

from llmopt.dataset import read_rows
from llmopt.llvm.passes import vocabulary
from llmopt.model import format as fmt
from llmopt.model.tokenizer import ModelMeta, load_tokenizer, pass_token_ids, stop_token_ids
from training.tokenizer import chars_per_token, train_tokenizer


@pytest.fixture(scope="module")
def trained(tmp_path_factory, data):
    rows = read_rows(data, "train")
    out = tmp_path_factory.mktemp("tok")
    texts = [t for r in rows for t in (r["ir"], r["optimized_ir"])]
    train_tokenizer(texts, vocabulary(), out, vocab_size=1000, llvm_version=19)
    return out, read_rows(data, "validation")


def test_round_trip_and_compression(trained):
    out, rows = trained
    tok = PreTrainedTokenizerFast.from_pretrained(str(out))  # plain HF loading works
    tok = load_tokenizer(out)
    for row in rows:
        for text in (row["ir"], "".join(fmt.build_example(row))):
            ids = tok(text, add_special_tokens=False)["input_ids"]
            assert tok.decode(ids) == text
    assert chars_per_token(tok, [r["ir"] for r in rows]) > 2.0


def test_every_pass_and_tag_is_one_token(trained):
    out, _ = trained
    tok = load_tokenizer(out)
    passes = ModelMeta.load(out).passes
    assert passes == vocabulary()
    ids = pass_token_ids(tok, passes)
    assert len(set(ids.values())) == len(passes)
    answer = fmt.build_answer(fmt.Answer(passes), with_counts=False)
    assert len(tok(answer, add_special_tokens=False)["input_ids"]) == len(passes) + 3  # + <passes> </passes> </s>
    for tag in fmt.SPECIAL_TOKENS:
        assert len(tok(tag, add_special_tokens=False)["input_ids"]) == 1
    assert len(stop_token_ids(tok, "passes")) == 2
    # A pass list decodes back to the names, even with special tokens skipped.
    assert tok.decode(list(ids.values())[:3], skip_special_tokens=True).split() == passes[:3]
