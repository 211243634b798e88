"""Vectors read back from the embedding cache are checked, and a foreign SQLite file is one
line (issue 14, sections 2 and 3)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interbias.embedding.cache import AUDIO_CHECKS, EmbeddingCache
from interbias.utils.errors import RunError

FAST = settings(
    max_examples=40, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck)
)
KEY = ("a" * 64, "chainkey@fe12345678", "encfp")
#: A row's records as the current code stores them: none, then the audio checks' verdict.
CHECKED = f'[{{"audio_checks": {AUDIO_CHECKS}}}]'


def _unit(dim: int, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def _raw_put(
    path: Path, key: tuple[str, str, str], vec: np.ndarray, dim: int | None = None, realised: str = CHECKED
) -> None:
    db = sqlite3.connect(str(path))
    db.execute(
        "INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?, ?, ?)",
        (*key, int(vec.shape[0] if dim is None else dim), np.ascontiguousarray(vec, np.float32).tobytes(), realised),
    )
    db.commit()
    db.close()


def test_a_good_vector_is_served(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    v = _unit(8)
    cache.put_many([(KEY, v, [{"op": "x"}])])
    got = cache.get_many([KEY])[KEY]
    np.testing.assert_array_equal(got.vector, v)
    assert got.realised == [{"op": "x"}]


@pytest.mark.parametrize("realised", ["[]", '[{"op": "x"}]', '[{"audio_checks": 0}]'])
def test_an_entry_stored_under_other_audio_checks_is_not_served(tmp_path: Path, realised: str) -> None:
    """A row without the current checks' verdict (stored before checks were recorded, or under
    other checks) is left out and counted: its item is computed again, so a warm cache decides
    what a cold one does."""
    path = tmp_path / "e.sqlite"
    EmbeddingCache(path).close()
    _raw_put(path, KEY, _unit(8), realised=realised)
    cache = EmbeddingCache(path)
    assert cache.get_many([KEY]) == {} and cache.n_unchecked == 1
    cache.put_many([(KEY, _unit(8), [{"op": "x"}])])  # recomputed: stored with the verdict
    assert cache.get_many([KEY])[KEY].realised == [{"op": "x"}] and cache.n_unchecked == 0


@pytest.mark.parametrize(
    ("vec", "problem"),
    [
        (np.array([np.nan, 1, 0, 0], np.float32), "holds 1 non-finite value(s)"),
        (np.zeros(4, np.float32), "is all zeros"),
        (np.array([3e38, 0, 0, 0], np.float32), "has L2 norm 3e+38; stored vectors are L2-normalised (norm 1)"),
        (np.array([0.5, 0, 0, 0], np.float32), "has L2 norm 0.5; stored vectors are L2-normalised (norm 1)"),
    ],
)
def test_a_bad_vector_names_the_cache_file_and_key(tmp_path: Path, vec: np.ndarray, problem: str) -> None:
    path = tmp_path / "e.sqlite"
    EmbeddingCache(path).close()
    _raw_put(path, KEY, vec)
    with pytest.raises(RunError) as info:
        EmbeddingCache(path).get_many([KEY])
    assert str(info.value) == (
        f"embedding cache {path}: the entry for utterance sha256 {'a' * 16}…, chain {KEY[1]}, encoder {KEY[2]} "
        f"{problem}; delete the cache file to recompute"
    )


def test_a_vector_of_another_dimension_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "e.sqlite"
    cache = EmbeddingCache(path)
    other = ("b" * 64, KEY[1], KEY[2])
    cache.put_many([(KEY, _unit(8), []), (other, _unit(6), [])])
    with pytest.raises(RunError, match="holds 6 values; the row records 6, the encoder gives 8"):
        cache.get_many([KEY, other])
    with pytest.raises(RunError, match="holds 8 values; the row records 8, the encoder gives 192"):
        cache.get_many([KEY], dims={KEY[2]: 192})
    _raw_put(path, KEY, _unit(8), dim=9)
    with pytest.raises(RunError, match="holds 8 values; the row records 9"):
        cache.get_many([KEY])


@FAST
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=4, max_size=4))
def test_generated_cache_rows_are_served_only_when_usable(tmp_path_factory, values: list[float]) -> None:
    path = tmp_path_factory.mktemp("c") / "e.sqlite"
    EmbeddingCache(path).close()
    vec = np.array(values, dtype=np.float32)
    _raw_put(path, KEY, vec)
    with np.errstate(all="ignore"):
        norm = float(np.linalg.norm(vec.astype(np.float64)))
    usable = bool(np.isfinite(vec).all()) and abs(norm - 1.0) <= 1e-3
    cache = EmbeddingCache(path)
    if usable:
        np.testing.assert_array_equal(cache.get_many([KEY])[KEY].vector, vec)
    else:
        with pytest.raises(RunError, match=f"embedding cache {path}: the entry for utterance"):
            cache.get_many([KEY])
    cache.close()


def _sqlite_file(path: Path, ddl: str) -> Path:
    """An SQLite database at ``path`` holding what ``ddl`` creates."""
    db = sqlite3.connect(str(path))
    db.execute(ddl)
    db.commit()
    db.close()
    return path


def test_a_foreign_sqlite_file_is_one_line_and_left_untouched(tmp_path: Path) -> None:
    path = _sqlite_file(tmp_path / "e.sqlite", "CREATE TABLE notes (id INTEGER, body TEXT)")
    before = path.read_bytes()
    with pytest.raises(RunError) as info:
        EmbeddingCache(path)
    assert str(info.value) == (
        f"embedding cache {path} is an SQLite file of something else (tables: notes), not an interbias embedding "
        "cache; point --cache-dir elsewhere"
    )
    assert path.read_bytes() == before


def test_a_wrong_schema_and_a_non_database_are_one_line(tmp_path: Path) -> None:
    path = _sqlite_file(tmp_path / "e.sqlite", "CREATE TABLE embeddings (k TEXT, v BLOB)")
    with pytest.raises(RunError, match=r"table embeddings has columns k, v, not interbias's"):
        EmbeddingCache(path)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(RunError, match=r"is damaged \(file is not a database\); delete it to rebuild$"):
        EmbeddingCache(junk)


def test_a_cache_dir_that_is_a_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    with pytest.raises(RunError) as info:
        EmbeddingCache(tmp_path / "afile" / "embeddings.sqlite")
    assert str(info.value) == f"cache folder {tmp_path / 'afile'}: {tmp_path / 'afile'} exists and is not a folder"


# ---- an intact cache that cannot be used now is never called damaged (issue 28, item 4) ----------


def _filled(path: Path) -> EmbeddingCache:
    cache = EmbeddingCache(path)
    cache.put_many([(KEY, _unit(8), [])])
    return cache


def test_a_full_disk_says_keep_the_cache(tmp_path: Path) -> None:
    cache = _filled(tmp_path / "e.sqlite")
    cache._db.execute(f"PRAGMA max_page_count = {cache._db.execute('PRAGMA page_count').fetchone()[0]}")
    many = [((f"{i:064d}", "c", "encfp"), _unit(256, i), []) for i in range(400)]
    with pytest.raises(RunError) as info:
        cache.put_many(many)
    msg = str(info.value)
    assert "delete" not in msg and "damaged" not in msg.replace("not damaged", "")
    assert msg.startswith(f"cannot write the embedding cache {tmp_path / 'e.sqlite'} (database or disk is full)")
    assert "the file is not damaged, keep it: free disk space" in msg
    cache.close()
    assert EmbeddingCache(tmp_path / "e.sqlite").get_many([KEY])[KEY].vector.shape == (8,)  # it was intact


def test_a_read_only_cache_says_keep_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "e.sqlite"
    _filled(path).close()
    real = sqlite3.connect
    # a read-only mount (root ignores file permissions): SQLite opened read-only, as it is there
    monkeypatch.setattr(sqlite3, "connect", lambda p, **kw: real(f"file:{p}?mode=ro", uri=True, **kw))
    with pytest.raises(RunError) as info:
        cache = EmbeddingCache(path)
        cache.put_many([(("b" * 64, "c", "encfp"), _unit(8), [])])
    msg = str(info.value)
    assert "delete" not in msg and "the file is not damaged, keep it" in msg and "readonly" in msg
