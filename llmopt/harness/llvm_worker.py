"""What a harness worker process does with one pass-list evaluation (runs inside the pool).

Each worker parses an input once, keeps it (LRU), and clones it for every evaluation.  A pass
list that starts with a meta-pass (`default<Oz>` in half of the autotuner's lists) runs that
expensive prefix once per input: the result is kept and cloned like the parsed input.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable

from llmopt.llvm.capi import Context, LLVMError, Module
from llmopt.llvm.per_function import run_per_function

_MAX_PARSED = 64
_context: Context | None = None
_parsed: OrderedDict[str, Module] = OrderedDict()


def _memoized(key: str, make: Callable[[], Module]) -> Module:
    """The module kept under `key`, made (and the least recently used one dropped) on a miss."""
    module = _parsed.get(key)
    if module is None:
        module = _parsed[key] = make()
        if len(_parsed) > _MAX_PARSED:
            _parsed.popitem(last=False)[1].dispose()
    else:
        _parsed.move_to_end(key)
    return module


def _module_for(ir: str, version: int | None) -> Module:
    global _context
    if _context is None:
        _context = Context(version)
    context = _context
    return _memoized(hashlib.sha1(ir.encode()).hexdigest(), lambda: context.parse(ir))


def _after_prefix(ir: str, prefix: str, version: int | None) -> Module:
    def make() -> Module:
        module = _module_for(ir, version).clone()
        try:
            module.run_passes(prefix)
        except LLVMError:
            module.dispose()
            raise
        return module

    return _memoized(hashlib.sha1(ir.encode()).hexdigest() + "|" + prefix, make)


def evaluate(task: dict) -> dict:
    """task: {ir, pipeline, version, want_ir, objsize, prefix?, rest?, per_function?} -> {instcount, ir?,
    objsize?} or {error}.

    With `prefix` (a meta-pass pipeline) and `rest` given, runs `rest` on the memoized result of
    `prefix` -- the same IR as running `pipeline` whole.  With `per_function` ([(function, pipeline)]),
    each function gets its own pipeline (`llmopt.llvm.per_function`) and `pipeline` is ignored.
    """
    try:
        if task.get("prefix"):
            module = _after_prefix(task["ir"], task["prefix"], task.get("version"))
        else:
            module = _module_for(task["ir"], task.get("version"))
    except LLVMError as err:
        message = str(err)
        return {"error": message if task.get("prefix") and "error:" not in message else f"invalid IR: {err}"}
    work = module.clone()
    try:
        if task.get("per_function"):  # [(function, pipeline)]: each function its own list
            run_per_function(work, task["per_function"])
        else:
            pipeline = task["rest"] if task.get("prefix") else task["pipeline"]
            if pipeline:
                work.run_passes(pipeline)
        broken = work.verify()
        if broken:
            return {"error": f"pipeline produced invalid IR: {broken.splitlines()[0]}"}
        result: dict = {"instcount": work.instcount()}
        if task.get("want_ir"):
            result["ir"] = work.to_string()
        if task.get("objsize"):
            result["objsize"] = work.objsize()
        return result
    except LLVMError as err:
        return {"error": str(err)}
    finally:
        work.dispose()
