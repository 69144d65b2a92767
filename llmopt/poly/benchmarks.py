"""The benchmark programs: Pearl's Table 3 set and five PolyBench kernels, at two sizes.

Pearl (paper 000, Table 3): blur, cvtcolor, doitgen, heat2d, heat3d, jacobi2d, mvt, seidel2d;
PolyBench 4.2: gemm, 2mm, syrk, atax, fdtd-2d.  The loop structure and statements follow the
PolyBench sources (Tiramisu's versions for blur, cvtcolor and heat2d), except gemm, which keeps
PolyBench 3.2's `i j k` nest with `C[i][j] *= beta` inside it (4.2 moved k outside j, already the
unit-stride order); scalars alpha and beta are the constants 1.5 and 1.2.  `benchmark(name)` is
the measured size, chosen so that the original program at `-O3` runs 10-500 ms on the 2-core
development machine (docs in the module's table below, measured with `Measurer.baseline_o3`);
`benchmark(name, small=True)` is a size that runs in microseconds, for tests.  These programs are
never used for training.
"""

from __future__ import annotations

from llmopt.poly.program import Program, ProgramError, program_from_dict

STENCIL5 = "0.2 * ({X}[i][j] + {X}[i][j-1] + {X}[i][j+1] + {X}[i+1][j] + {X}[i-1][j])"
HEAT3 = ("0.125 * ({X}[i+1][j][k] - 2.0 * {X}[i][j][k] + {X}[i-1][j][k]) + "
         "0.125 * ({X}[i][j+1][k] - 2.0 * {X}[i][j][k] + {X}[i][j-1][k]) + "
         "0.125 * ({X}[i][j][k+1] - 2.0 * {X}[i][j][k] + {X}[i][j][k-1]) + {X}[i][j][k]")
HEAT2 = ("A[t % 2][i][j] + 0.125 * (A[t % 2][i+1][j] - 2.0 * A[t % 2][i][j] + A[t % 2][i-1][j]) + "
         "0.125 * (A[t % 2][i][j+1] - 2.0 * A[t % 2][i][j] + A[t % 2][i][j-1])")
SEIDEL = ("(A[i-1][j-1] + A[i-1][j] + A[i-1][j+1] + A[i][j-1] + A[i][j] + A[i][j+1] + "
          "A[i+1][j-1] + A[i+1][j] + A[i+1][j+1]) / 9.0")


def _s(name: str, iters: str, domain: str, body: str, shares: int = 0) -> dict:
    return {"name": name, "iterators": iters.split(), "domain": domain, "body": body, "shares": shares}


def _t(dtype: str, *shape: str) -> dict:
    return {"type": dtype, "shape": list(shape)}


SPECS: dict[str, dict] = {
    "blur": {"tensors": {"img": _t("float", "N", "M", "3"), "bx": _t("float", "N", "M", "3"),
                         "out": _t("float", "N", "M", "3")},
             "statements": [
                 _s("S0", "i j c", "0 <= i < N and 0 <= j < M - 2 and 0 <= c < 3",
                    "bx[i][j][c] = (img[i][j][c] + img[i][j+1][c] + img[i][j+2][c]) / 3.0f"),
                 _s("S1", "i j c", "0 <= i < N - 2 and 0 <= j < M - 2 and 0 <= c < 3",
                    "out[i][j][c] = (bx[i][j][c] + bx[i+1][j][c] + bx[i+2][j][c]) / 3.0f")]},
    "cvtcolor": {"tensors": {"img": _t("float", "3", "N", "M"), "w": _t("float", "3", "3"),
                             "out": _t("float", "3", "N", "M")},
                 "statements": [_s("S0", "c i j", "0 <= c < 3 and 0 <= i < N and 0 <= j < M",
                                   "out[c][i][j] = w[c][0] * img[0][i][j] + w[c][1] * img[1][i][j]"
                                   " + w[c][2] * img[2][i][j]")]},
    "doitgen": {"tensors": {"A": _t("double", "NR", "NQ", "NP"), "C4": _t("double", "NP", "NP"),
                            "sum": _t("double", "NP")},
                "statements": [
                    _s("S0", "r q p", "0 <= r < NR and 0 <= q < NQ and 0 <= p < NP", "sum[p] = 0.0"),
                    _s("S1", "r q p s", "0 <= r < NR and 0 <= q < NQ and 0 <= p < NP and 0 <= s < NP",
                       "sum[p] += A[r][q][s] * C4[s][p]", 3),
                    _s("S2", "r q p", "0 <= r < NR and 0 <= q < NQ and 0 <= p < NP", "A[r][q][p] = sum[p]", 2)]},
    "heat2d": {"tensors": {"A": _t("double", "2", "N", "N")},
               "statements": [_s("S0", "t i j", "0 <= t < T and 1 <= i < N - 1 and 1 <= j < N - 1",
                                 f"A[(t + 1) % 2][i][j] = {HEAT2}")]},
    "heat3d": {"tensors": {"A": _t("double", "N", "N", "N"), "B": _t("double", "N", "N", "N")},
               "statements": [
                   _s("S0", "t i j k", "0 <= t < T and 1 <= i < N - 1 and 1 <= j < N - 1 and 1 <= k < N - 1",
                      "B[i][j][k] = " + HEAT3.format(X="A")),
                   _s("S1", "t i j k", "0 <= t < T and 1 <= i < N - 1 and 1 <= j < N - 1 and 1 <= k < N - 1",
                      "A[i][j][k] = " + HEAT3.format(X="B"), 1)]},
    "jacobi2d": {"tensors": {"A": _t("double", "N", "N"), "B": _t("double", "N", "N")},
                 "statements": [
                     _s("S0", "t i j", "0 <= t < T and 1 <= i < N - 1 and 1 <= j < N - 1",
                        "B[i][j] = " + STENCIL5.format(X="A")),
                     _s("S1", "t i j", "0 <= t < T and 1 <= i < N - 1 and 1 <= j < N - 1",
                        "A[i][j] = " + STENCIL5.format(X="B"), 1)]},
    "mvt": {"tensors": {"A": _t("double", "N", "N"), "x1": _t("double", "N"), "x2": _t("double", "N"),
                        "y1": _t("double", "N"), "y2": _t("double", "N")},
            "statements": [_s("S0", "i j", "0 <= i < N and 0 <= j < N", "x1[i] += A[i][j] * y1[j]"),
                           _s("S1", "i j", "0 <= i < N and 0 <= j < N", "x2[i] += A[j][i] * y2[j]")]},
    "seidel2d": {"tensors": {"A": _t("double", "N", "N")},
                 "statements": [_s("S0", "t i j", "0 <= t < T and 1 <= i < N - 1 and 1 <= j < N - 1",
                                   f"A[i][j] = {SEIDEL}")]},
    "gemm": {"tensors": {"A": _t("double", "NI", "NK"), "B": _t("double", "NK", "NJ"), "C": _t("double", "NI", "NJ")},
             "statements": [_s("S0", "i j", "0 <= i < NI and 0 <= j < NJ", "C[i][j] *= 1.2"),
                            _s("S1", "i j k", "0 <= i < NI and 0 <= j < NJ and 0 <= k < NK",
                               "C[i][j] += 1.5 * A[i][k] * B[k][j]", 2)]},
    "2mm": {"tensors": {"A": _t("double", "NI", "NK"), "B": _t("double", "NK", "NJ"), "C": _t("double", "NJ", "NL"),
                        "D": _t("double", "NI", "NL"), "tmp": _t("double", "NI", "NJ")},
            "statements": [
                _s("S0", "i j", "0 <= i < NI and 0 <= j < NJ", "tmp[i][j] = 0.0"),
                _s("S1", "i j k", "0 <= i < NI and 0 <= j < NJ and 0 <= k < NK",
                   "tmp[i][j] += 1.5 * A[i][k] * B[k][j]", 2),
                _s("S2", "i j", "0 <= i < NI and 0 <= j < NL", "D[i][j] *= 1.2"),
                _s("S3", "i j k", "0 <= i < NI and 0 <= j < NL and 0 <= k < NJ",
                   "D[i][j] += tmp[i][k] * C[k][j]", 2)]},
    "syrk": {"tensors": {"A": _t("double", "N", "M"), "C": _t("double", "N", "N")},
             "statements": [_s("S0", "i j", "0 <= i < N and 0 <= j <= i", "C[i][j] *= 1.2"),
                            _s("S1", "i k j", "0 <= i < N and 0 <= k < M and 0 <= j <= i",
                               "C[i][j] += 1.5 * A[i][k] * A[j][k]", 1)]},
    "atax": {"tensors": {"A": _t("double", "M", "N"), "x": _t("double", "N"), "y": _t("double", "N"),
                         "tmp": _t("double", "M")},
             "statements": [_s("S0", "i", "0 <= i < N", "y[i] = 0.0"),
                            _s("S1", "i", "0 <= i < M", "tmp[i] = 0.0"),
                            _s("S2", "i j", "0 <= i < M and 0 <= j < N", "tmp[i] += A[i][j] * x[j]", 1),
                            _s("S3", "i j", "0 <= i < M and 0 <= j < N", "y[j] += A[i][j] * tmp[i]", 1)]},
    "fdtd-2d": {"tensors": {"ex": _t("double", "NX", "NY"), "ey": _t("double", "NX", "NY"),
                            "hz": _t("double", "NX", "NY"), "fict": _t("double", "T")},
                "statements": [
                    _s("S0", "t j", "0 <= t < T and 0 <= j < NY", "ey[0][j] = fict[t]"),
                    _s("S1", "t i j", "0 <= t < T and 1 <= i < NX and 0 <= j < NY",
                       "ey[i][j] -= 0.5 * (hz[i][j] - hz[i-1][j])", 1),
                    _s("S2", "t i j", "0 <= t < T and 0 <= i < NX and 1 <= j < NY",
                       "ex[i][j] -= 0.5 * (hz[i][j] - hz[i][j-1])", 1),
                    _s("S3", "t i j", "0 <= t < T and 0 <= i < NX - 1 and 0 <= j < NY - 1",
                       "hz[i][j] -= 0.7 * (ex[i][j+1] - ex[i][j] + ey[i+1][j] - ey[i][j])", 1)]},
}

# name -> (measured size, test size)
SIZES: dict[str, tuple[dict[str, int], dict[str, int]]] = {
    "blur": ({"N": 2048, "M": 2048}, {"N": 20, "M": 24}),
    "cvtcolor": ({"N": 2048, "M": 2048}, {"N": 20, "M": 24}),
    "doitgen": ({"NR": 96, "NQ": 96, "NP": 96}, {"NR": 6, "NQ": 7, "NP": 8}),
    "heat2d": ({"T": 50, "N": 1024}, {"T": 4, "N": 20}),
    "heat3d": ({"T": 20, "N": 120}, {"T": 3, "N": 10}),
    "jacobi2d": ({"T": 50, "N": 1000}, {"T": 4, "N": 20}),
    "mvt": ({"N": 4000}, {"N": 24}),
    "seidel2d": ({"T": 20, "N": 1000}, {"T": 4, "N": 20}),
    "gemm": ({"NI": 384, "NJ": 384, "NK": 384}, {"NI": 18, "NJ": 20, "NK": 22}),
    "2mm": ({"NI": 320, "NJ": 320, "NK": 320, "NL": 320}, {"NI": 16, "NJ": 18, "NK": 20, "NL": 22}),
    "syrk": ({"N": 512, "M": 512}, {"N": 20, "M": 18}),
    "atax": ({"M": 4000, "N": 4000}, {"M": 22, "N": 24}),
    "fdtd-2d": ({"T": 50, "NX": 800, "NY": 800}, {"T": 4, "NX": 20, "NY": 22}),
}

PEARL = ["blur", "cvtcolor", "doitgen", "heat2d", "heat3d", "jacobi2d", "mvt", "seidel2d"]
POLYBENCH = ["gemm", "2mm", "syrk", "atax", "fdtd-2d"]
NAMES = PEARL + POLYBENCH


def benchmark(name: str, small: bool = False) -> Program:
    """Benchmark `name` at its measured size (or the test size); ProgramError for an unknown name."""
    if name not in SPECS:
        raise ProgramError(f"unknown benchmark {name!r}; choose one of {', '.join(NAMES)}")
    params = SIZES[name][1 if small else 0]
    return program_from_dict({"name": name, "params": params, **SPECS[name]})


def benchmarks(small: bool = False) -> dict[str, Program]:
    return {n: benchmark(n, small) for n in NAMES}
