"""The result cache never stops a run (corrupt file -> moved aside; unusable path -> uncached), and
`llmopt cache info|clear` report and empty it."""

import json
import os
import subprocess
import sys

from llmopt.harness import Harness
from llmopt.harness.cache import ResultCache, open_cache
from tests.conftest import EXAMPLES


def _filled(path, n=4000):
    cache = ResultCache(path)
    keys = [f"k{i:05d}" for i in range(n)]
    cache.put_many({k: {"instcount": i, "note": "x" * 200} for i, k in enumerate(keys)})
    cache._conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")  # everything into the main file
    cache.close()
    return keys


def test_truncated_cache_is_moved_aside_and_replaced(tmp_path, caplog):
    path = tmp_path / "results.sqlite"
    keys = _filled(path)
    os.truncate(path, path.stat().st_size // 3)
    cache = ResultCache(path)
    found = cache.get_many(keys)  # the corruption shows at open or at the first query
    assert len(found) < len(keys)
    cache.put("fresh", {"instcount": 1})
    assert cache.get("fresh") == {"instcount": 1}
    assert list(tmp_path.glob("results.sqlite.corrupt-*")), "the corrupt file is kept for inspection"
    assert any("corrupt" in r.getMessage() for r in caplog.records)


def test_overwritten_cache_in_a_harness(tmp_path, example_ir):
    path = tmp_path / "results.sqlite"
    path.write_bytes(os.urandom(64 * 1024))
    with Harness(workers=1, cache=str(path)) as harness:
        assert harness.cache is not None
        first = harness.evaluate(example_ir, ["sroa"])
        second = harness.evaluate(example_ir, ["sroa"])
    assert first.ok and second.cached and second.instcount == first.instcount


def test_unusable_path_runs_uncached(tmp_path, example_ir, caplog):
    assert open_cache(tmp_path) is None  # a directory
    (tmp_path / "file").write_text("x")
    assert open_cache(tmp_path / "file" / "results.sqlite") is None  # its folder is a file
    assert sum("running without" in r.getMessage() for r in caplog.records) == 2
    with Harness(workers=1, cache=str(tmp_path)) as harness:
        assert harness.cache is None and harness.evaluate(example_ir, ["sroa"]).ok


def _cli(*args, cache_dir):
    env = {**os.environ, "LLMOPT_CACHE_DIR": str(cache_dir)}
    return subprocess.run([sys.executable, "-m", "llmopt", *args], capture_output=True, text=True, timeout=120, env=env)


def test_cache_info_and_clear(tmp_path):
    out = _cli("opt", str(EXAMPLES / "example.ll"), "-p", "sroa,gvn", "-o", str(tmp_path / "o.ll"), cache_dir=tmp_path)
    assert out.returncode == 0, out.stderr
    info = json.loads(_cli("cache", "info", "--json", cache_dir=tmp_path).stdout)["caches"]
    results = next(c for c in info if c["path"].endswith("results.sqlite"))
    # -Oz without IR, the pipeline with IR (opt -o)
    assert results["entries"] == 2 and results["kinds"] == {"pass list": 1, "pass list + IR": 1}
    assert results["bytes"] > 0
    text = _cli("cache", "info", cache_dir=tmp_path)
    assert text.returncode == 0 and "2 entries" in text.stdout
    cleared = json.loads(_cli("cache", "clear", "--json", cache_dir=tmp_path).stdout)["cleared"]
    assert cleared[0]["entries"] == 2
    info = json.loads(_cli("cache", "info", "--json", cache_dir=tmp_path).stdout)["caches"]
    assert info[0]["entries"] == 0


def test_cache_info_on_a_corrupt_file_warns_and_reports_empty(tmp_path):
    (tmp_path / "results.sqlite").write_bytes(b"\0garbage" * 1000)
    out = _cli("cache", "info", "--json", cache_dir=tmp_path)
    assert out.returncode == 0 and "corrupt" in out.stderr
    assert json.loads(out.stdout)["caches"][0]["entries"] == 0


def test_a_file_that_is_not_a_cache_is_never_moved(tmp_path, caplog):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes, not a database\n" * 100)
    assert open_cache(notes) is None  # run uncached, with a warning
    assert notes.read_text().startswith("my notes") and not list(tmp_path.glob("*.corrupt-*"))
    assert any("not an SQLite cache" in r.getMessage() for r in caplog.records)


def test_an_empty_cache_is_used_not_swapped_for_a_scratch_one(tmp_path):
    """`open_cache(path) or scratch_cache()` keeps the file even while it is empty, so it fills."""
    from llmopt.harness.cache import open_cache, scratch_cache

    path = tmp_path / "poly.sqlite"
    cache = open_cache(path) or scratch_cache()
    assert len(cache) == 0 and cache.path == path
    cache.put("k", {"ok": True})
    cache.close()
    assert (open_cache(path) or scratch_cache()).get("k") == {"ok": True}
