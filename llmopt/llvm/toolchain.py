"""Find the LLVM tools and libLLVM of one major version.

Default major version 19 (Debian's `llvm-19`/`clang-19`); override with the
`LLMOPT_LLVM_VERSION` environment variable or the CLI's `--llvm-version`.
Any installed LLVM >= 14 works.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from llmopt.errors import LlmoptError

DEFAULT_LLVM_VERSION = 19
MIN_LLVM_VERSION = 14


class ToolchainError(RuntimeError, LlmoptError):
    """The requested LLVM toolchain is not installed (message names the package to install)."""


def requested_version() -> int:
    value = os.environ.get("LLMOPT_LLVM_VERSION", str(DEFAULT_LLVM_VERSION))
    try:
        version = int(value)
    except ValueError as err:
        raise ToolchainError(f"LLMOPT_LLVM_VERSION must be a major version number, got {value!r}") from err
    if version < MIN_LLVM_VERSION:
        raise ToolchainError(f"llmopt needs LLVM >= {MIN_LLVM_VERSION}, got {version}")
    return version


def _package_for(tool: str, version: int) -> str:
    return f"clang-{version}" if tool == "clang" else f"llvm-{version}"


@dataclass(frozen=True)
class Toolchain:
    """Paths of the tools and the shared library of one LLVM major version."""

    version: int
    bindir: Path
    libllvm: Path | None

    def tool(self, name: str) -> str:
        """Absolute path of `name` (e.g. "opt"); a one-line ToolchainError if missing."""
        for candidate in (self.bindir / name, Path(f"/usr/bin/{name}-{self.version}")):
            if candidate.exists():
                return str(candidate)
        found = shutil.which(f"{name}-{self.version}")
        if found:
            return found
        raise ToolchainError(
            f"`{name}` for LLVM {self.version} not found: install it with "
            f"`apt-get install {_package_for(name, self.version)}`"
        )

    @property
    def opt(self) -> str:
        return self.tool("opt")

    @property
    def clang(self) -> str:
        return self.tool("clang")

    @property
    def llc(self) -> str:
        return self.tool("llc")


def _version_of(opt_path: str) -> int | None:
    try:
        out = subprocess.run([opt_path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"LLVM version (\d+)", out)
    return int(match.group(1)) if match else None


def _candidate_bindirs(version: int) -> list[Path]:
    dirs = [Path(f"/usr/lib/llvm-{version}/bin"), Path(f"/usr/local/opt/llvm@{version}/bin")]
    llvm_config = shutil.which(f"llvm-config-{version}") or shutil.which("llvm-config")
    if llvm_config:
        try:
            out = subprocess.run([llvm_config, "--bindir"], capture_output=True, text=True, timeout=30)
            dirs.append(Path(out.stdout.strip()))
        except (OSError, subprocess.TimeoutExpired):
            pass
    plain_opt = shutil.which("opt")
    if plain_opt:
        dirs.append(Path(os.path.realpath(plain_opt)).parent)
    return dirs


def _find_libllvm(bindir: Path, version: int) -> Path | None:
    libdir = bindir.parent / "lib"
    patterns = [f"libLLVM-{version}.so", f"libLLVM.so.{version}*", f"libLLVM-{version}*.so*", "libLLVM.so"]
    for pattern in patterns:
        for path in sorted(glob.glob(str(libdir / pattern))):
            return Path(path)
    return None


@functools.cache
def find_toolchain(version: int | None = None) -> Toolchain:
    """The toolchain of LLVM `version` (default: `requested_version()`)."""
    version = version or requested_version()
    if version < MIN_LLVM_VERSION:
        raise ToolchainError(f"llmopt needs LLVM >= {MIN_LLVM_VERSION}, got {version}")
    for bindir in _candidate_bindirs(version):
        opt = bindir / "opt"
        if opt.exists() and _version_of(str(opt)) == version:
            return Toolchain(version, bindir, _find_libllvm(bindir, version))
    versioned = shutil.which(f"opt-{version}")
    if versioned and _version_of(versioned) == version:
        bindir = Path(os.path.realpath(versioned)).parent
        return Toolchain(version, bindir, _find_libllvm(bindir, version))
    raise ToolchainError(
        f"LLVM {version} not found: install it with `apt-get install llvm-{version} clang-{version}` "
        f"(or choose another version with LLMOPT_LLVM_VERSION / --llvm-version)"
    )
