"""A small, real dataset for tests and benchmarks when `data/` has not been built.

A few C functions are compiled the way the -Oz baseline sees them (`clang -Oz -Xclang
-disable-llvm-passes`), normalized, and "autotuned" by trying a handful of pass lists with the
real `opt`; the best list, its count and its optimized IR fill the row, with the columns of
docs/interfaces.md.  It is a stand-in for the data pipeline, not a replacement.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from llmopt.dataset import write_splits
from llmopt.llvm.ir import ir_hash, normalize_ir
from llmopt.llvm.passes import build_pipeline
from llmopt.llvm.subprocess_opt import count_instructions_text, run_opt
from llmopt.llvm.toolchain import find_toolchain

C_FUNCTIONS: dict[str, str] = {
    "sum": "int sum(int *a, int n){int s=0; for(int i=0;i<n;i++) s+=a[i]; return s;}",
    "max3": "int max3(int a,int b,int c){int m=a; if(b>m)m=b; if(c>m)m=c; return m;}",
    "fact": "long fact(int n){long r=1; while(n>1){r*=n; n--;} return r;}",
    "clamp": "int clamp(int x,int lo,int hi){return x<lo?lo:(x>hi?hi:x);}",
    "dot": "float dot(float*a,float*b,int n){float s=0; for(int i=0;i<n;i++) s+=a[i]*b[i]; return s;}",
    "strlen2": "int strlen2(const char*s){int n=0; while(s[n]) n++; return n;}",
    "swap": "void swap(int*a,int*b){int t=*a; *a=*b; *b=t;}",
    "fib": "int fib(int n){int a=0,b=1; for(int i=0;i<n;i++){int t=a+b; a=b; b=t;} return a;}",
    "abs_diff": "int abs_diff(int a,int b){return a>b?a-b:b-a;}",
    "count_if": "int count_if(int*a,int n,int k){int c=0; for(int i=0;i<n;i++) if(a[i]==k) c++; return c;}",
    "gcd": "unsigned gcd(unsigned a,unsigned b){while(b){unsigned t=a%b; a=b; b=t;} return a;}",
    "sign": "int sign(int x){if(x>0) return 1; if(x<0) return -1; return 0;}",
    "memset8": "void memset8(char*p,char v,int n){for(int i=0;i<n;i++) p[i]=v;}",
    "poly": "int poly(int x){int y=3*x*x; y=y+2*x; y=y+7; return y;}",
    "isdigit2": "int isdigit2(int c){return c>='0'&&c<='9';}",
    "rev": "void rev(int*a,int n){for(int i=0,j=n-1;i<j;i++,j--){int t=a[i];a[i]=a[j];a[j]=t;}}",
    "minarr": "int minarr(int*a,int n){int m=a[0]; for(int i=1;i<n;i++) if(a[i]<m) m=a[i]; return m;}",
    "pow2": "int pow2(int e){int r=1; for(int i=0;i<e;i++) r<<=1; return r;}",
    "select4": "int select4(int k){switch(k){case 0:return 10;case 1:return 20;case 2:return 30;default:return 0;}}",
    "avg": "double avg(double*a,int n){double s=0; for(int i=0;i<n;i++) s+=a[i]; return n?s/n:0;}",
    "popcnt": "int popcnt(unsigned x){int c=0; while(x){c+=x&1; x>>=1;} return c;}",
    "copy": "void copy(int*d,const int*s,int n){for(int i=0;i<n;i++) d[i]=s[i];}",
    "is_sorted": "int is_sorted(int*a,int n){for(int i=1;i<n;i++) if(a[i-1]>a[i]) return 0; return 1;}",
    "hash": "unsigned hash(const char*s){unsigned h=5381; while(*s) h=h*33+(unsigned char)*s++; return h;}",
}

# A tiny "search": the best of these by instruction count (ties -> shorter list).
CANDIDATES: list[list[str]] = [
    ["default<Oz>"],
    ["mem2reg", "instcombine", "simplifycfg"],
    ["sroa", "early-cse", "instcombine", "simplifycfg"],
    ["mem2reg", "simplifycfg", "instcombine", "dce"],
    ["sroa", "instcombine", "loop-rotate", "licm", "simplifycfg", "instcombine"],
    ["default<Oz>", "instcombine", "simplifycfg"],
    ["mem2reg", "gvn", "instcombine", "simplifycfg", "adce"],
    ["sroa", "simplifycfg", "reassociate", "instcombine"],
]


def compile_c(source: str, clang: str | None = None) -> str:
    """Unoptimized IR as the -Oz pipeline sees it (keeps minsize/optsize, no optnone)."""
    clang = clang or find_toolchain().clang
    with tempfile.NamedTemporaryFile("w", suffix=".c") as f:
        f.write(source)
        f.flush()
        proc = subprocess.run([clang, "-Oz", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-S", "-o", "-", f.name],
                              capture_output=True, text=True, check=True)
    return proc.stdout


def instcount(ir: str) -> int:
    return sum(count_instructions_text(ir).values())


def make_rows(names: list[str] | None = None) -> list[dict]:
    """Dataset rows (docs/interfaces.md columns) for the named C functions (all by default)."""
    version = find_toolchain().version
    rows = []
    for name in names or list(C_FUNCTIONS):
        ir = normalize_ir(compile_c(C_FUNCTIONS[name]))
        results = []
        for passes in CANDIDATES:
            build_pipeline(passes)  # validates the names against this LLVM's vocabulary
            out = normalize_ir(run_opt(ir, passes))
            results.append((instcount(out), len(passes), passes, out))
        oz = results[0][0]
        best_count, _, best_passes, best_ir = min(results, key=lambda r: (r[0], r[1]))
        rows.append({
            "source": "llmopt-sample", "license": "Apache-2.0", "llvm_version": version, "name": name,
            "ir": ir, "ir_hash": ir_hash(ir), "n_tokens": len(ir) // 3, "instcount_input": instcount(ir),
            "instcount_oz": oz, "passes": best_passes, "instcount_best": best_count, "optimized_ir": best_ir,
            "evaluations": len(CANDIDATES), "search_method": "random",
        })
    return rows


def write_sample_dataset(out_dir: str | Path, n_validation: int = 4, n_test: int = 4) -> Path:
    """Write train/validation/test parquet files of the sample rows to `out_dir` (deterministic split)."""
    rows = sorted(make_rows(), key=lambda r: r["ir_hash"])
    splits = {
        "validation": rows[:n_validation],
        "test": rows[n_validation:n_validation + n_test],
        "train": rows[n_validation + n_test:],
    }
    out_dir = Path(out_dir)
    write_splits(splits, out_dir)
    (out_dir / "README.md").write_text("# llmopt sample dataset\nTiny real dataset made by training/sample_data.py.\n")
    return out_dir


def cached_sample_dataset(out_dir: str | Path) -> Path:
    """`write_sample_dataset(out_dir)` unless it is already there (tests share one copy per session)."""
    out_dir = Path(out_dir)
    if not (out_dir / "README.md").exists():  # written last, so its presence means complete
        write_sample_dataset(out_dir)
    return out_dir


if __name__ == "__main__":
    import sys

    print(write_sample_dataset(sys.argv[1] if len(sys.argv) > 1 else "data/sample"))
