"""A thin ctypes binding to the libLLVM C API: parse, clone, run passes, count, print.

Shaped like llvmlite.binding: Context, Module and TargetMachine own their LLVM object and free it
with `close()` or a `with` block; a Function is a typed, borrowed view of one function of a Module
(no raw pointers above this module); each class declares the C prototypes it uses next to itself.
A fatal LLVM error (an abort inside a pass) kills the calling process, so outside of tests
this module is used only inside the harness's worker processes.
"""

from __future__ import annotations

import ctypes
import functools
import platform
from collections.abc import Iterator
from ctypes import POINTER, byref, c_char_p, c_int, c_size_t, c_uint, c_uint64, c_void_p

from llmopt.llvm.toolchain import ToolchainError, find_toolchain


class LLVMError(RuntimeError):
    """An error that LLVM reported through the C API (parse error, bad pipeline...)."""


_FUNCTION_INDEX = 0xFFFFFFFF  # LLVMAttributeFunctionIndex (-1 as unsigned)
_TARGETS = {"x86_64": "X86", "amd64": "X86", "aarch64": "AArch64", "arm64": "AArch64"}


@functools.cache
def load_library(version: int | None = None) -> ctypes.CDLL:
    toolchain = find_toolchain(version)
    if toolchain.libllvm is None:
        raise ToolchainError(f"libLLVM {toolchain.version} not found: `apt-get install llvm-{toolchain.version}`")
    lib = ctypes.CDLL(str(toolchain.libllvm))
    sig = {**Context.PROTOTYPES, **TargetMachine.PROTOTYPES, **Module.PROTOTYPES, **Function.PROTOTYPES}
    for name, (args, res) in sig.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    arch = _TARGETS.get(platform.machine().lower())
    if arch:
        for part in ("TargetInfo", "Target", "TargetMC", "AsmPrinter", "AsmParser"):
            init = getattr(lib, f"LLVMInitialize{arch}{part}", None)
            if init is not None:
                init.restype = None
                init()
    return lib


class _Handle:
    """An owned LLVM object: `close()` frees it once (later calls do nothing); `with` closes it."""

    handle: int | None

    def _free(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        if self.handle:
            self._free()
            self.handle = None

    dispose = close  # the C API's word, kept for older callers

    @property
    def closed(self) -> bool:
        return not self.handle

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _take_message(lib: ctypes.CDLL, ptr: int | None) -> str:
    if not ptr:
        return ""
    text = ctypes.string_at(ptr).decode(errors="replace")
    lib.LLVMDisposeMessage(ptr)
    return text


class TargetMachine(_Handle):
    """The host TargetMachine with opt's defaults (empty CPU and features) so counts match `opt`."""

    PROTOTYPES = {
        "LLVMGetDefaultTargetTriple": ([], c_void_p),
        "LLVMGetTargetFromTriple": ([c_char_p, POINTER(c_void_p), POINTER(c_char_p)], c_int),
        "LLVMCreateTargetMachine": ([c_void_p, c_char_p, c_char_p, c_char_p, c_int, c_int, c_int], c_void_p),
        "LLVMDisposeTargetMachine": ([c_void_p], None),
    }

    def __init__(self, lib: ctypes.CDLL, triple: str | None = None):
        self._lib = lib
        if not triple:
            triple = _take_message(lib, lib.LLVMGetDefaultTargetTriple())
        target, err = c_void_p(), c_char_p()
        if lib.LLVMGetTargetFromTriple(triple.encode(), byref(target), byref(err)):
            raise LLVMError(f"no target for {triple}: {err.value.decode() if err.value else ''}")
        # opt level 2 (Default), reloc default, code model default: what `opt` builds.
        self.handle = lib.LLVMCreateTargetMachine(target, triple.encode(), b"", b"", 2, 0, 0)
        self.triple = triple

    def _free(self) -> None:
        self._lib.LLVMDisposeTargetMachine(self.handle)


class Context(_Handle):
    """An LLVMContext; modules parsed in it die with it (`with Context() as ctx:`)."""

    PROTOTYPES = {
        "LLVMContextCreate": ([], c_void_p),
        "LLVMContextDispose": ([c_void_p], None),
        "LLVMCreateMemoryBufferWithMemoryRangeCopy": ([c_char_p, c_size_t, c_char_p], c_void_p),
        "LLVMParseIRInContext": ([c_void_p, c_void_p, POINTER(c_void_p), POINTER(c_char_p)], c_int),
        "LLVMDisposeMessage": ([c_void_p], None),
    }

    def __init__(self, version: int | None = None):
        self.lib = load_library(version)
        self.handle = self.lib.LLVMContextCreate()
        self._targets: dict[str, TargetMachine] = {}

    def parse(self, ir: str) -> Module:
        data = ir.encode()
        buf = self.lib.LLVMCreateMemoryBufferWithMemoryRangeCopy(data, len(data), b"input")
        mod, err = c_void_p(), c_char_p()
        # LLVMParseIRInContext takes ownership of the buffer.
        if self.lib.LLVMParseIRInContext(self.handle, buf, byref(mod), byref(err)):
            message = err.value.decode(errors="replace") if err.value else "cannot parse IR"
            raise LLVMError(message.strip())
        return Module(self, mod.value)

    def target_machine(self, triple: str) -> TargetMachine:
        if triple not in self._targets:
            self._targets[triple] = TargetMachine(self.lib, triple or None)
        return self._targets[triple]

    def _free(self) -> None:
        for tm in self._targets.values():
            tm.close()
        self.lib.LLVMContextDispose(self.handle)


class Module(_Handle):
    """One parsed module (owned; `close()` or `with` frees it before its context goes)."""

    PROTOTYPES = {
        "LLVMCloneModule": ([c_void_p], c_void_p),
        "LLVMDisposeModule": ([c_void_p], None),
        "LLVMPrintModuleToString": ([c_void_p], c_void_p),
        "LLVMGetFirstFunction": ([c_void_p], c_void_p),
        "LLVMGetNextFunction": ([c_void_p], c_void_p),
        "LLVMVerifyModule": ([c_void_p, c_int, POINTER(c_void_p)], c_int),
        "LLVMCreatePassBuilderOptions": ([], c_void_p),
        "LLVMDisposePassBuilderOptions": ([c_void_p], None),
        "LLVMRunPasses": ([c_void_p, c_char_p, c_void_p, c_void_p], c_void_p),
        "LLVMGetErrorMessage": ([c_void_p], c_void_p),
        "LLVMDisposeErrorMessage": ([c_void_p], None),
        "LLVMGetTarget": ([c_void_p], c_char_p),
        "LLVMTargetMachineEmitToMemoryBuffer": ([c_void_p, c_void_p, c_int, POINTER(c_char_p), POINTER(c_void_p)], c_int),
        "LLVMGetBufferStart": ([c_void_p], c_void_p),
        "LLVMGetBufferSize": ([c_void_p], c_size_t),
        "LLVMDisposeMemoryBuffer": ([c_void_p], None),
        "LLVMGetNamedFunction": ([c_void_p, c_char_p], c_void_p),
    }

    def __init__(self, context: Context, handle: int):
        self.context, self.lib, self.handle = context, context.lib, handle

    def clone(self) -> Module:
        return Module(self.context, self.lib.LLVMCloneModule(self.handle))

    @property
    def triple(self) -> str:
        raw = self.lib.LLVMGetTarget(self.handle)
        return raw.decode() if raw else ""

    def run_passes(self, pipeline: str) -> None:
        """Run a new-pass-manager pipeline with a host TargetMachine (as `opt -passes=` does)."""
        tm = self.context.target_machine(self.triple)
        options = self.lib.LLVMCreatePassBuilderOptions()
        try:
            error = self.lib.LLVMRunPasses(self.handle, pipeline.encode(), tm.handle, options)
        finally:
            self.lib.LLVMDisposePassBuilderOptions(options)
        if error:
            msg_ptr = self.lib.LLVMGetErrorMessage(error)
            message = ctypes.string_at(msg_ptr).decode(errors="replace")
            self.lib.LLVMDisposeErrorMessage(msg_ptr)
            raise LLVMError(message)

    def functions(self) -> Iterator[Function]:
        fn = self.lib.LLVMGetFirstFunction(self.handle)
        while fn:
            yield Function(self, fn)
            fn = self.lib.LLVMGetNextFunction(fn)

    def function(self, name: str) -> Function | None:
        """Function `name`, or None (look functions up by name again after passes ran: a pass may
        have deleted one, and its old handle then dangles)."""
        fn = self.lib.LLVMGetNamedFunction(self.handle, name.encode())
        return Function(self, fn) if fn else None

    def instcount_by_function(self) -> dict[str, int]:
        """Instructions per defined function (LLVM's instcount definition)."""
        return {fn.name: fn.instcount() for fn in self.functions() if not fn.is_declaration}

    def instcount(self) -> int:
        return sum(self.instcount_by_function().values())

    def verify(self) -> str | None:
        """None if the module is valid, else LLVM's verifier message."""
        msg = c_void_p()
        broken = self.lib.LLVMVerifyModule(self.handle, 2, byref(msg))  # 2 = LLVMReturnStatusAction
        text = _take_message(self.lib, msg.value)
        return text.strip() or "invalid module" if broken else None

    def emit_object(self) -> bytes:
        """The object file `llc -filetype=obj` would write (host TargetMachine)."""
        tm = self.context.target_machine(self.triple)
        err, buf = c_char_p(), c_void_p()
        if self.lib.LLVMTargetMachineEmitToMemoryBuffer(tm.handle, self.handle, 1, byref(err), byref(buf)):
            raise LLVMError(err.value.decode(errors="replace") if err.value else "codegen failed")
        try:
            return ctypes.string_at(self.lib.LLVMGetBufferStart(buf), self.lib.LLVMGetBufferSize(buf))
        finally:
            self.lib.LLVMDisposeMemoryBuffer(buf)

    def objsize(self) -> int:
        """Bytes of .text + .data of the object code (the secondary metric)."""
        from llmopt.llvm.elf import text_and_data_bytes

        return text_and_data_bytes(self.emit_object())

    def to_string(self) -> str:
        return _take_message(self.lib, self.lib.LLVMPrintModuleToString(self.handle))

    def _free(self) -> None:
        self.lib.LLVMDisposeModule(self.handle)


class Function:
    """A function of a Module (borrowed: valid while the module lives and no pass deleted it)."""

    PROTOTYPES = {
        "LLVMIsDeclaration": ([c_void_p], c_int),
        "LLVMGetValueName2": ([c_void_p, POINTER(c_size_t)], c_void_p),
        "LLVMGetFirstBasicBlock": ([c_void_p], c_void_p),
        "LLVMGetNextBasicBlock": ([c_void_p], c_void_p),
        "LLVMGetFirstInstruction": ([c_void_p], c_void_p),
        "LLVMGetNextInstruction": ([c_void_p], c_void_p),
        "LLVMGetEnumAttributeKindForName": ([c_char_p, c_size_t], c_uint),
        "LLVMCreateEnumAttribute": ([c_void_p, c_uint, c_uint64], c_void_p),
        "LLVMGetEnumAttributeAtIndex": ([c_void_p, c_uint, c_uint], c_void_p),
        "LLVMAddAttributeAtIndex": ([c_void_p, c_uint, c_void_p], None),
        "LLVMRemoveEnumAttributeAtIndex": ([c_void_p, c_uint, c_uint], None),
    }

    def __init__(self, module: Module, handle: int):
        self.module, self.lib, self.handle = module, module.lib, handle

    @property
    def name(self) -> str:
        size = c_size_t()
        ptr = self.lib.LLVMGetValueName2(self.handle, byref(size))
        return ctypes.string_at(ptr, size.value).decode(errors="replace")

    @property
    def is_declaration(self) -> bool:
        return bool(self.lib.LLVMIsDeclaration(self.handle))

    def instcount(self) -> int:
        lib, n = self.lib, 0
        bb = lib.LLVMGetFirstBasicBlock(self.handle)
        while bb:
            inst = lib.LLVMGetFirstInstruction(bb)
            while inst:
                n += 1
                inst = lib.LLVMGetNextInstruction(inst)
            bb = lib.LLVMGetNextBasicBlock(bb)
        return n

    def _attr_kind(self, name: str) -> int:
        kind = self.lib.LLVMGetEnumAttributeKindForName(name.encode(), len(name))
        if not kind:
            raise LLVMError(f"unknown attribute {name!r}")
        return kind

    def has_attr(self, name: str) -> bool:
        return bool(self.lib.LLVMGetEnumAttributeAtIndex(self.handle, _FUNCTION_INDEX, self._attr_kind(name)))

    def add_attr(self, name: str) -> None:
        attr = self.lib.LLVMCreateEnumAttribute(self.module.context.handle, self._attr_kind(name), 0)
        self.lib.LLVMAddAttributeAtIndex(self.handle, _FUNCTION_INDEX, attr)

    def remove_attr(self, name: str) -> None:
        self.lib.LLVMRemoveEnumAttributeAtIndex(self.handle, _FUNCTION_INDEX, self._attr_kind(name))
