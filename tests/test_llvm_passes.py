"""The vocabulary and the pipeline builder: any sequence must be a valid pipeline."""

import random

import pytest

from llmopt.harness import Harness
from llmopt.llvm.passes import (
    META_PASSES,
    UnknownPassError,
    build_pipeline,
    load_vocabulary,
    parse_pass_list,
    registered_passes,
    vocabulary,
)


def test_vocabulary_is_curated_and_registered():
    vocab = load_vocabulary()
    assert 100 <= len(vocab.names) <= 130
    assert set(META_PASSES) <= set(vocab.names)
    assert not any(name.startswith("attributor") for name in vocab.names)  # miscompile in LLVM 19
    registered = registered_passes()
    for name in vocab.names:
        if vocab.kinds[name] != "meta":
            assert name.split("<")[0] in registered, name


def test_builder_wraps_by_kind():
    pipeline = build_pipeline(["default<Oz>", "licm", "loop-rotate", "indvars", "instcombine", "inline", "globalopt"])
    assert pipeline == ("default<Oz>,function(loop-mssa(licm,loop-rotate)),function(loop(indvars)),"
                        "function(instcombine<no-verify-fixpoint>),cgscc(inline),globalopt")


def test_meta_pass_at_most_once_and_unknown_rejected():
    with pytest.raises(UnknownPassError):
        build_pipeline(["default<Oz>", "default<O3>"])
    with pytest.raises(UnknownPassError):
        build_pipeline(["not-a-pass"])
    with pytest.raises(UnknownPassError):
        build_pipeline(["attributor"])


def test_parse_pass_list_keeps_parameters():
    assert parse_pass_list("default<Oz>, gvn<no-pre>,-sroa simplifycfg") == ["default<Oz>", "gvn<no-pre>", "sroa", "simplifycfg"]


def test_thousands_of_random_sequences_are_valid_pipelines(corpus):
    """Every random sequence from the vocabulary runs: no pipeline error, no LLVM abort, no timeout."""
    names = vocabulary()
    metas = [n for n in names if n in META_PASSES]
    plain = [n for n in names if n not in META_PASSES]
    rng = random.Random(0)
    tasks = []
    for i in range(3000):
        seq = [rng.choice(plain) for _ in range(rng.randint(1, 10))]
        if rng.random() < 0.3:
            seq.insert(rng.randrange(len(seq) + 1), rng.choice(metas))
        tasks.append((corpus[i % len(corpus)], seq))
    with Harness(workers=2, cache=False, timeout=60) as harness:
        results = harness.evaluate_tasks(tasks)
    failures = [(r.passes, r.error) for r in results if not r.ok]
    assert failures == []
    assert harness.pool.restarts == 0


def test_resolve_pipeline_wraps_vocabulary_and_asks_llvm_otherwise():
    from llmopt.llvm.passes import PipelineError, resolve_pipeline

    assert resolve_pipeline(" sroa, licm ") == ("function(sroa),function(loop-mssa(licm))", ["sroa", "licm"])
    raw = "function(instcombine<max-iterations=2>),cgscc(inline)"
    assert resolve_pipeline(raw) == (raw, None)
    for bad in ("", "gvn,,", ",gvn", "function(gvn", "no-such-pass", "sroa,default<Oz>,(gvn)"):
        with pytest.raises(PipelineError):
            resolve_pipeline(bad)
