"""Optimize each function of a module with its own pass list, in one module.

`opt` applies one pipeline to every function.  To give function F its own list L_F, every
other defined function is frozen first -- marked `optnone noinline` (which the verifier
allows only without `optsize`, `minsize`, `alwaysinline`, `optdebug`, so those are taken off) --
then L_F runs and the attributes are put back as they were.  Function passes skip `optnone`
functions and nothing is inlined into or out of them, so each function sees what it saw when it
was predicted on its own (an extracted module where the others are declarations).  Every step is
an LLVM pass or an attribute hint, so the result means what the input meant; callers still
verify and count it.
"""

from __future__ import annotations

from collections.abc import Sequence

from llmopt.llvm.capi import Module

# Function attributes that cannot coexist with `optnone`/`noinline`; removed while frozen.
_CONFLICTING = ("optsize", "minsize", "alwaysinline", "optdebug")
_FREEZE = ("optnone", "noinline")


def _freeze_all_but(module: Module, keep: str) -> dict[str, dict[str, bool]]:
    """Freeze every defined function except `keep`; returns {name: {attribute: was present}}."""
    saved = {}
    for fn in list(module.functions()):
        name = fn.name
        if name == keep or fn.is_declaration:
            continue
        had = {attr: fn.has_attr(attr) for attr in (*_CONFLICTING, *_FREEZE)}
        for attr in _CONFLICTING:
            if had[attr]:
                fn.remove_attr(attr)
        for attr in _FREEZE:
            if not had[attr]:
                fn.add_attr(attr)
        saved[name] = had
    return saved


def _thaw(module: Module, saved: dict[str, dict[str, bool]]) -> None:
    """Undo `_freeze_all_but` on the functions that still exist (a pass may have deleted some)."""
    for name, had in saved.items():
        fn = module.function(name)
        if fn is None:
            continue
        for attr in _FREEZE:
            if not had[attr]:
                fn.remove_attr(attr)
        for attr in _CONFLICTING:
            if had[attr]:
                fn.add_attr(attr)


def run_per_function(module: Module, pipelines: Sequence[tuple[str, str]]) -> None:
    """Run pipeline P on function F only, for each (F, P) in order; an empty P leaves F as it is.

    A function missing from the module (e.g. deleted by an earlier step) is skipped.
    """
    for name, pipeline in pipelines:
        if not pipeline or module.function(name) is None:
            continue
        saved = _freeze_all_but(module, name)
        try:
            module.run_passes(pipeline)
        finally:
            _thaw(module, saved)
