"""Instruction counts through llvmlite's bundled LLVM.

llvmlite carries its own, newer LLVM: good for parsing and counting IR when no system LLVM is
installed, and as an independent cross-check of the C-API counts -- never as the optimizer of
record (its passes are not the system LLVM's that datasets and baselines are measured with).
"""

from __future__ import annotations


def llvmlite_available() -> bool:
    try:
        import llvmlite.binding  # noqa: F401
    except ImportError:
        return False
    return True


def instcount_by_function(ir: str) -> dict[str, int]:
    """Instructions per defined function (raises RuntimeError with LLVM's message on bad IR)."""
    import llvmlite.binding as llvm

    module = llvm.parse_assembly(ir)
    return {fn.name: sum(1 for block in fn.blocks for _ in block.instructions)
            for fn in module.functions if not fn.is_declaration}


def bundled_llvm_version() -> int:
    import llvmlite.binding as llvm

    return llvm.llvm_version_info[0]
