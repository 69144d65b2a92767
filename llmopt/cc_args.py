"""Clang driver arguments for `llmopt cc`: what kind of call this is, and the rewritten argument lists.

`classify(args)` reads a clang command line without running anything.  A call that compiles exactly
one C or C++ source to an object, assembly or a linked program is a *unit*: llmopt compiles it in
three steps (frontend -> IR, verified pass lists, codegen from the optimized IR).  Everything else --
preprocessing, dependency-only runs, version and help queries, assembler or IR inputs, several
sources, stdin, response files -- *passes through* to clang unchanged.  A unit whose flags need
clang's own pass pipeline (sanitizers, profiling, LTO, ...) is *skipped*: built by plain clang.

The argument lists mirror clang's driver rules where they matter for a build: default output names
and the dependency file / target of -MD and -MMD (clang's `getDependencyFileName` and the default
`-MT`), so make sees the same files either way.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

C_EXTENSIONS = (".c",)
CXX_EXTENSIONS = (".cc", ".cp", ".cpp", ".cxx", ".c++", ".C", ".CC", ".CPP", ".CXX", ".C++")
# Inputs clang compiles itself but llmopt does not (assembly, preprocessed or IR input, Objective-C...).
OTHER_COMPILABLE = (".s", ".S", ".sx", ".i", ".ii", ".ll", ".bc", ".m", ".mm", ".M", ".cu", ".cl", ".h",
                    ".hh", ".hpp", ".hxx", ".H")

# Options whose value is the next argument when given alone (`-o out.o`, `-I dir`, `-MF x.d`).
SEPARATE_VALUE = frozenset({
    "-o", "-I", "-D", "-U", "-L", "-l", "-x", "-F", "-B", "-T", "-u", "-z", "-e", "-A",
    "-include", "-imacros", "-isystem", "-iquote", "-idirafter", "-iprefix", "-iwithprefix",
    "-iwithprefixbefore", "-isysroot", "-iframework", "-cxx-isystem", "-ivfsoverlay", "-iapinotes-modules",
    "-MF", "-MT", "-MQ", "-MJ", "-Xclang", "-Xlinker", "-Xassembler", "-Xpreprocessor", "-Xanalyzer",
    "-Xopenmp-target", "-mllvm", "-target", "-arch", "--sysroot", "-gcc-toolchain", "--gcc-toolchain",
    "-serialize-diagnostics", "-dependency-file", "-dependency-dot", "-working-directory", "-install_name",
    "-framework", "-rpath", "-exported_symbols_list", "-filelist", "--param", "-aux-info", "--output",
    "--include-directory", "--define-macro", "--undefine-macro", "--language", "--include", "-Xarch_host",
    "-Xarch_device", "-Xcuda-ptxas", "-Xcuda-fatbinary", "-dylib_file", "-seg1addr", "-umbrella",
})

# Any of these makes the call a plain clang call (query, preprocessing, IR output, ...).
PASS_THROUGH_FLAGS = frozenset({
    "-E", "-M", "-MM", "-fsyntax-only", "-emit-llvm", "-emit-ast", "-###", "-v", "--verbose", "--version",
    "-dumpversion", "-dumpfullversion", "-dumpmachine", "-dumpspecs", "-help", "--help", "--help-hidden",
    "-precompile", "--precompile", "--analyze", "-rewrite-objc", "-fdriver-only", "-save-temps",
})
PASS_THROUGH_PREFIXES = ("-print-", "--print-", "-save-temps=", "-cc1", "-x", "--language")

# Flags whose work happens in clang's own pass pipeline, which llmopt replaces: the unit is built by
# plain clang (the instrumentation or the LTO bitcode would be lost otherwise).
SKIP_PREFIXES = ("-fsanitize", "-fprofile", "-fauto-profile", "-fcs-profile", "-fcoverage", "--coverage",
                 "-ftest-coverage", "-fxray", "-flto", "-fembed-bitcode", "-finstrument-function", "-pg",
                 "-fpseudo-probe", "-fmemory-profile", "-fopenmp-targets", "-fexperimental-sanitize",
                 "-fwhole-program-vtables", "-fsplit-lto-unit", "-MJ", "-Ofast", "-Wp,-M")

OPT_LEVELS = frozenset({"-O", "-O0", "-O1", "-O2", "-O3", "-O4", "-Os", "-Oz", "-Og"})
DEP_FLAGS = frozenset({"-MD", "-MMD", "-MP", "-MV", "-MG"})
DEP_VALUE = ("-MF", "-MT", "-MQ")
# Only the frontend reads these: left out when codegen starts from IR.
PREPROCESSOR_VALUE = frozenset({"-I", "-D", "-U", "-include", "-imacros", "-isystem", "-iquote", "-idirafter",
                                "-iprefix", "-iwithprefix", "-iwithprefixbefore", "-iframework", "-cxx-isystem",
                                "-ivfsoverlay", "--include-directory", "--define-macro", "--undefine-macro",
                                "--include", "-Xpreprocessor", "-MF", "-MT", "-MQ"})
PREPROCESSOR_JOINED = ("-I", "-D", "-U", "-std=", "--std=", "-Wp,", "-nostdinc", "-MF", "-MT", "-MQ", "-C",
                       "-CC", "-H", "-trigraphs", "-ansi", "-isystem", "-iquote", "-idirafter", "-imacros",
                       "-include")
# Codegen from IR keeps the rest; clang would call -I etc. unused there (and -Werror would make it fatal).
QUIET_UNUSED = "-Wno-unused-command-line-argument"
BASELINE = ("-Oz", "-Xclang", "-disable-llvm-passes")  # README "How a measurement is made"


@dataclass
class Arg:
    """One option or input as given: the words it took (`["-o", "x.o"]`) and its value, if any."""

    words: list[str]
    name: str            # the option name (`-o`), or "" for an input
    value: str | None = None


@dataclass
class Invocation:
    """A classified clang command line.  `kind`: "unit", "skip" or "pass"; `reason` says why."""

    args: list[str]
    kind: str
    reason: str = ""
    parsed: list[Arg] = field(default_factory=list)
    source: str | None = None
    mode: str = "link"          # "object" (-c), "assembly" (-S) or "link"

    @property
    def output(self) -> str | None:
        """The -o value, if given (the last one wins, as in clang)."""
        outputs = [a.value for a in self.parsed if a.name == "-o"]
        return outputs[-1] if outputs else None

    def output_path(self) -> str:
        """Where the result lands: -o, else clang's default (`stem.o`, `stem.s`, `a.out`) in the cwd."""
        if self.output:
            return self.output
        stem = os.path.splitext(os.path.basename(self.source or ""))[0]
        return {"object": f"{stem}.o", "assembly": f"{stem}.s"}.get(self.mode, "a.out")

    def has_opt_level(self) -> bool:
        return any(a.name in OPT_LEVELS for a in self.parsed)


def _split(args: list[str]) -> list[Arg]:
    """Group `args` into options with their values and inputs (clang's spelling rules, simplified)."""
    out, i = [], 0
    while i < len(args):
        word = args[i]
        if word in SEPARATE_VALUE:
            value = args[i + 1] if i + 1 < len(args) else None
            out.append(Arg(args[i : i + 2], word, value))
            i += 2
            continue
        if word == "-" or not word.startswith("-"):
            out.append(Arg([word], "", word))
        elif word.startswith("-o") and not word.startswith("-obj"):
            out.append(Arg([word], "-o", word[2:]))
        elif word.startswith(DEP_VALUE):
            out.append(Arg([word], word[:3], word[3:]))
        else:
            out.append(Arg([word], word.split("=", 1)[0] if word.startswith("--") else word))
        i += 1
    return out


def _pass_reason(args: list[str], parsed: list[Arg]) -> str:
    """Why the call passes through unchanged ("" if it does not)."""
    if not args:
        return "no arguments"
    for word in args:
        if word.startswith("@"):
            return f"response file {word}"
        if word in PASS_THROUGH_FLAGS or word.startswith(PASS_THROUGH_PREFIXES):
            return f"{word} is not a compilation llmopt optimizes"
    inputs = [a.value for a in parsed if a.name == "" and a.value is not None]
    if "-" in inputs:
        return "source from stdin"
    sources = [p for p in inputs if p.endswith(C_EXTENSIONS + CXX_EXTENSIONS)]
    others = [p for p in inputs if p.endswith(OTHER_COMPILABLE)]
    if len(sources) != 1 or others:
        return f"{len(sources)} C/C++ sources and {len(others)} other compiler inputs (llmopt takes one source)"
    if any(a.name in ("-c", "-S") for a in parsed) and len(inputs) > 1:
        return "linker inputs given to a compile-only call"
    return ""


def _skip_reason(args: list[str], source: str) -> str:
    for word in args:
        if word.startswith(SKIP_PREFIXES):
            return f"{word} needs clang's own pass pipeline"
    base = os.path.basename(source)
    if base.startswith("conftest.") or "/CMakeFiles/" in os.path.abspath(source):
        return "configure probe"
    return ""


def classify(args: list[str]) -> Invocation:
    """Classify a clang command line (the arguments after `llmopt cc`)."""
    parsed = _split(args)
    reason = _pass_reason(args, parsed)
    if reason:
        return Invocation(args, "pass", reason, parsed)
    source = next(a.value for a in parsed if a.name == "" and a.value.endswith(C_EXTENSIONS + CXX_EXTENSIONS))
    mode = "assembly" if any(a.name == "-S" for a in parsed) else "object" if any(a.name == "-c" for a in parsed) \
        else "link"
    skip = _skip_reason(args, source)
    return Invocation(args, "skip" if skip else "unit", skip, parsed, source, mode)


def fallback_args(inv: Invocation) -> list[str]:
    """Plain clang for a unit: the user's arguments, with -Oz when they chose no -O level."""
    return list(inv.args) if inv.has_opt_level() else ["-Oz", *inv.args]


def _dependency_args(inv: Invocation) -> list[str]:
    """-MF / -MQ spelled out as clang would default them, so step 1's temporary -o changes nothing."""
    names = {a.name for a in inv.parsed}
    if not names & {"-MD", "-MMD"}:
        return []
    extra = []
    if "-MF" not in names:
        base = os.path.splitext(inv.output)[0] if inv.output else os.path.splitext(os.path.basename(inv.source))[0]
        extra += ["-MF", base + ".d"]
    if not names & {"-MT", "-MQ"}:
        target = inv.output or os.path.splitext(os.path.basename(inv.source))[0] + ".o"
        extra += ["-MQ", target]  # the driver quotes its default target like -MQ does
    return extra


def frontend_args(inv: Invocation, ir_path: str) -> list[str]:
    """Step 1: the unit's unoptimized IR, as `clang -Oz -Xclang -disable-llvm-passes -emit-llvm` makes it,
    with the user's own preprocessor, language and target flags (and their dependency file)."""
    kept: list[str] = []
    for a in inv.parsed:
        if a.name == "" or a.name in OPT_LEVELS or a.name in ("-o", "-c", "-S"):
            continue
        kept += a.words
    return [*BASELINE, *kept, *_dependency_args(inv), "-emit-llvm", "-S", "-o", ir_path, inv.source or "",
            QUIET_UNUSED]


def _frontend_only(a: Arg) -> bool:
    if a.name in OPT_LEVELS or a.name in DEP_FLAGS or a.name in PREPROCESSOR_VALUE:
        return True
    return a.name != "" and len(a.words) == 1 and a.words[0].startswith(PREPROCESSOR_JOINED)


def codegen_args(inv: Invocation, ir_path: str, *, optimize: bool = False, output: str | None = None) -> list[str]:
    """Step 3: the user's command with the source replaced by IR (in place, so link order holds) and
    without frontend-only flags.  `optimize` runs clang's own -Oz pipeline (the baseline object);
    otherwise the IR is compiled as it is.  `output` replaces -o (and forces -c)."""
    out: list[str] = []
    for a in inv.parsed:
        if a.name == "" and a.value == inv.source:
            out.append(ir_path)
        elif output is not None and a.name in ("-o", "-c", "-S"):
            continue
        elif not _frontend_only(a):
            out += a.words
    if output is not None:
        out = [x for x in out if not _is_link_input(x, inv)] + ["-c", "-o", output]
    return [*(["-Oz"] if optimize else BASELINE), *out, QUIET_UNUSED]


def _is_link_input(word: str, inv: Invocation) -> bool:
    """Linker-only inputs (objects, libraries) of a link call, dropped when only an object is wanted."""
    return any(a.name == "" and a.value == word and a.value != inv.source for a in inv.parsed)
