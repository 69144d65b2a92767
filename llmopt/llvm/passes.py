"""Pass registry, the curated size-tuning vocabulary, and the pipeline builder.

The vocabulary is a data file per LLVM major version (`data/passes_llvmNN.json`): the pass
names a model may emit, each with its kind.  `build_pipeline` wraps every pass by its kind so
that *any* sequence from the vocabulary is a valid new-pass-manager pipeline.
"""

from __future__ import annotations

import functools
import json
import re
import string
import subprocess
from dataclasses import dataclass
from importlib import resources

from llmopt.errors import LlmoptError
from llmopt.llvm.syntax import split_top_level
from llmopt.llvm.toolchain import find_toolchain

META_PASSES = ("default<O0>", "default<O1>", "default<O2>", "default<O3>", "default<Os>", "default<Oz>")
OZ = "default<Oz>"
# Section headers of `opt --print-passes` -> pass kind.
_SECTIONS = {
    "Module passes": "module",
    "Module passes with params": "module",
    "CGSCC passes": "cgscc",
    "CGSCC passes with params": "cgscc",
    "Function passes": "function",
    "Function passes with params": "function",
    "LoopNest passes": "loopnest",
    "Loop passes": "loop",
    "Loop passes with params": "loop",
}


class UnknownPassError(ValueError, LlmoptError):
    """A pass name that is not in the vocabulary, or a meta-pass used twice."""


class PipelineError(ValueError, LlmoptError):
    """A pipeline string that LLVM's pass-pipeline parser rejects (the message is LLVM's)."""


@functools.cache
def registered_passes(version: int | None = None) -> dict[str, str]:
    """`opt --print-passes` of that LLVM as {pass name: kind} (parameters stripped)."""
    opt = find_toolchain(version).opt
    text = subprocess.run([opt, "--print-passes"], capture_output=True, text=True, timeout=60).stdout
    kinds: dict[str, str] = {}
    section = None
    for line in text.splitlines():
        if not line.startswith(" "):
            section = _SECTIONS.get(line.strip().rstrip(":"))
            continue
        if section:
            name = re.sub(r"<.*$", "", line.strip())
            kinds.setdefault(name, section)
    return kinds


@dataclass(frozen=True)
class Vocabulary:
    """The passes of one LLVM major version: names in order, kinds, and pipeline spellings."""

    llvm_version: int
    names: tuple[str, ...]
    kinds: dict[str, str]
    spelling: dict[str, str]

    def __contains__(self, name: str) -> bool:
        return name in self.kinds

    def kind(self, name: str) -> str:
        try:
            return self.kinds[name]
        except KeyError:
            raise UnknownPassError(f"unknown pass {name!r} (see `llmopt passes` for the vocabulary)") from None


def _data_file(version: int) -> dict:
    folder = resources.files("llmopt.llvm") / "data"
    available = sorted(
        int(m.group(1)) for p in folder.iterdir() if (m := re.fullmatch(r"passes_llvm(\d+)\.json", p.name))
    )
    # The file of that version, else the closest older one, else the oldest newer one.
    older = [v for v in available if v <= version]
    chosen = older[-1] if older else available[0]
    return json.loads((folder / f"passes_llvm{chosen}.json").read_text())


@functools.cache
def load_vocabulary(version: int | None = None) -> Vocabulary:
    """The curated vocabulary for LLVM `version`, filtered to what that `opt` registers."""
    version = version or find_toolchain().version
    data = _data_file(version)
    exact = data["llvm_version"] == version
    registered = None if exact else registered_passes(version)
    names, kinds, spelling = [], {}, {}
    for entry in data["passes"]:
        name, kind = entry["name"], entry["kind"]
        if registered is not None and kind != "meta" and re.sub(r"<.*$", "", name) not in registered:
            continue  # a pass this older/newer LLVM does not have
        names.append(name)
        kinds[name] = kind
        text = entry.get("pipeline", name)
        if not exact and "no-verify-fixpoint" in text and version < 18:
            text = name  # the fixpoint verifier (and its switch) arrived in LLVM 18
        spelling[name] = text
    return Vocabulary(version, tuple(names), kinds, spelling)


def vocabulary(version: int | None = None) -> list[str]:
    """Pass names a model may emit, meta-passes first."""
    return list(load_vocabulary(version).names)


def parse_pass_list(text: str) -> list[str]:
    """`"a,b, c"` or `"a b c"` -> ["a", "b", "c"] (commas inside <...> are kept)."""
    return [p.lstrip("-") for p in split_top_level(text, "," + string.whitespace, "<>()")]


def check_pass_list(passes: list[str], version: int | None = None) -> None:
    """Raise UnknownPassError unless every pass is in the vocabulary and meta-passes occur at most once."""
    vocab = load_vocabulary(version)
    metas = 0
    for name in passes:
        if vocab.kind(name) == "meta":
            metas += 1
    if metas > 1:
        raise UnknownPassError("a pass list may hold at most one meta-pass (default<O0>..default<Oz>)")


def build_pipeline(passes: list[str], version: int | None = None) -> str:
    """A valid `opt -passes=` pipeline for any sequence of vocabulary passes.

    Consecutive passes of one kind share a wrapper: function passes go in `function(...)`,
    cgscc passes in `cgscc(...)`, loop passes in `function(loop(...))`, except those that need
    MemorySSA (licm, loop-rotate, ...) which go in `function(loop-mssa(...))` -- LLVM aborts with
    "LICM requires MemorySSA" otherwise.  An empty list is the no-op pipeline.
    """
    check_pass_list(passes, version)
    vocab = load_vocabulary(version)
    groups: list[tuple[str, list[str]]] = []
    for name in passes:
        kind = vocab.kinds[name]
        if kind == "loopnest":
            kind = "loop"  # loop-nest passes run inside a loop pass manager
        text = vocab.spelling[name]
        if groups and groups[-1][0] == kind and kind not in ("module", "meta"):
            groups[-1][1].append(text)
        else:
            groups.append((kind, [text]))
    wrapped = []
    for kind, texts in groups:
        body = ",".join(texts)
        if kind in ("module", "meta"):
            wrapped.append(body)
        elif kind == "cgscc":
            wrapped.append(f"cgscc({body})")
        elif kind == "function":
            wrapped.append(f"function({body})")
        elif kind == "loop-mssa":
            wrapped.append(f"function(loop-mssa({body}))")
        else:
            wrapped.append(f"function(loop({body}))")
    return ",".join(wrapped) if wrapped else "function(no-op-function)"


def _has_empty_element(text: str) -> bool:
    """True for "gvn,,", ",gvn" or "a,(b)": an empty element at any comma, which LLVM rejects."""
    items, depth, current = [], 0, ""
    for char in text:
        depth += (char in "<(") - (char in ">)")
        if depth == 0 and char == ",":
            items.append(current.strip())
            current = ""
        else:
            current += char
    items.append(current.strip())
    return any(not item for item in items)


def check_pipeline(pipeline: str, version: int | None = None, timeout: float = 30) -> None:
    """PipelineError unless `opt -passes=PIPELINE` of that LLVM parses it.

    The check runs `opt` on an empty module: parsing is the whole test (no pass runs on a function),
    and `opt` is the reference, so a string accepted here is exactly one `opt -passes=` accepts."""
    opt = find_toolchain(version).opt
    try:
        proc = subprocess.run([opt, f"-passes={pipeline}", "-disable-output", "-"], input="",
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise PipelineError(f"opt did not answer within {timeout:g}s checking the pipeline {pipeline!r}") from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
        reason = re.sub(r"^\S*opt\S*: ", "", lines[-1]) if lines else f"opt exited with {proc.returncode}"
        raise PipelineError(f"invalid pass pipeline {pipeline!r}: {reason}")


def resolve_pipeline(text: str, version: int | None = None) -> tuple[str, list[str] | None]:
    """(the `opt -passes=` string, the vocabulary pass list or None) for a user's `-p` argument.

    A list of vocabulary passes ("sroa,default<Oz>") is wrapped by kind with `build_pipeline`, as
    the model's answers are; anything else must be a pipeline that LLVM itself parses
    ("function(instcombine<max-iterations=2>),cgscc(inline)"), checked by `check_pipeline`.
    Vocabulary checking is for model output only: a user may run any pipeline."""
    text = text.strip()
    if not text:
        raise PipelineError("empty pass pipeline: give passes such as -p \"sroa,instcombine\" "
                            "or a pipeline such as -p \"default<O2>\"")
    passes = parse_pass_list(text)
    vocab = load_vocabulary(version)
    if passes and not _has_empty_element(text) and all(p in vocab for p in passes):
        try:
            return build_pipeline(passes, version), passes
        except UnknownPassError:
            pass  # e.g. two meta-passes: LLVM decides whether the string is a pipeline
    check_pipeline(text, version)
    return text, None
