"""Token files (format, reader, writer, checks), the generated text, and the training windows."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from specbench.data import tokens as tok
from specbench.errors import UsageError

pytestmark = pytest.mark.needs("numpy")


def test_write_then_open_round_trips_through_a_memory_map(tmp_path: Path) -> None:
    train, held_out = np.arange(1000) % 300, np.arange(50) % 7
    written = tok.write_token_file(tmp_path / "t.bin", train, held_out, vocab_size=300, source="unit test")
    assert (written.dtype, written.vocab_size, written.train_tokens, written.eval_tokens) == ("uint16", 300, 1000, 50)
    assert isinstance(written.tokens, np.memmap)
    assert (tmp_path / "t.bin").stat().st_size == 1050 * 2
    np.testing.assert_array_equal(written.train, train)
    np.testing.assert_array_equal(written.eval, held_out)
    meta = json.loads((tmp_path / "t.json").read_text())
    assert meta == {
        "format": "specbench-tokens",
        "format_version": 1,
        "dtype": "uint16",
        "vocab_size": 300,
        "train_tokens": 1000,
        "eval_tokens": 50,
        "source": "unit test",
    }
    digest, largest = tok.scan(written)
    assert largest == 299
    assert digest == __import__("hashlib").sha256((tmp_path / "t.bin").read_bytes()).hexdigest()


def test_a_large_vocabulary_is_stored_as_uint32_little_endian(tmp_path: Path) -> None:
    train = np.array([70000, 1, 65536], dtype=np.int64)
    written = tok.write_token_file(tmp_path / "big.bin", train, train[:0], vocab_size=100000, source="s")
    assert written.dtype == "uint32"
    assert (tmp_path / "big.bin").read_bytes() == np.array([70000, 1, 65536], dtype="<u4").tobytes()


def test_ids_outside_the_vocabulary_are_refused_when_writing(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"token ids must lie in \[0, 10\), found \[0, 10\]"):
        tok.write_token_file(tmp_path / "t.bin", np.arange(11), np.arange(0), vocab_size=10, source="s")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format_version": 2}, "token file format version 2 not supported (expected 1)"),
        ({"format": "other"}, "expected a JSON object with format 'specbench-tokens'"),
        ({"dtype": "int8"}, "expected dtype one of uint16, uint32, found 'int8'"),
        ({"vocab_size": 70000}, "vocab_size 70000 does not fit dtype uint16"),
        ({"train_tokens": -1}, "expected train_tokens to be a non-negative integer, found -1"),
        ({"train_tokens": 99}, "expected 104 uint16 tokens (208 bytes) as t.json says, found 210 bytes"),
    ],
)
def test_a_bad_sidecar_or_size_is_refused_with_the_reason(tmp_path: Path, change: dict, message: str) -> None:
    tok.write_token_file(tmp_path / "t.bin", np.arange(100), np.arange(5), vocab_size=128, source="s")
    side = tmp_path / "t.json"
    side.write_text(json.dumps({**json.loads(side.read_text()), **change}))
    with pytest.raises(UsageError) as err:
        tok.open_token_file(tmp_path / "t.bin")
    assert message in str(err.value)


def test_missing_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        tok.open_token_file(tmp_path / "none.bin")
    (tmp_path / "lonely.bin").write_bytes(b"\0\0")
    with pytest.raises(UsageError, match=r"its sidecar .*lonely.json is missing"):
        tok.open_token_file(tmp_path / "lonely.bin")


def test_generated_text_is_deterministic_ascii_and_needs_context_to_predict() -> None:
    a = tok.generate_text(20000, 5)
    assert np.array_equal(a, tok.generate_text(20000, 5))
    assert not np.array_equal(a, tok.generate_text(20000, 6))
    assert len(a) == 20000 and int(a.max()) < 128
    text = bytes(a.astype(np.uint8)).decode("ascii")
    assert "the " in text and ". " in text
    _, counts = np.unique(a, return_counts=True)
    p = counts / counts.sum()
    unigram_entropy = float(-(p * np.log(p)).sum())
    # the smoke target (eval_loss 1.6 nats) lies well below what symbol frequencies alone give
    assert unigram_entropy > 2.5


def test_generated_splits_differ_and_keep_their_counts() -> None:
    train, held_out = tok.generated_splits(4096, 512)
    assert (len(train), len(held_out)) == (4096, 512)
    assert tok.arrays_sha256(train, held_out) != tok.arrays_sha256(held_out, train)


def test_windows_give_next_token_targets_and_cover_every_window_once_per_epoch() -> None:
    data = np.arange(1, 42, dtype=np.uint16)  # 41 tokens -> 10 windows of 4 + 1
    windows = tok.Windows(data, sequence=4)
    assert windows.count == 10
    batch = windows.batch(np.array([0, 2]))
    np.testing.assert_array_equal(batch, [[1, 2, 3, 4, 5], [9, 10, 11, 12, 13]])
    assert batch.dtype == np.int64
    stream = windows.shuffled(batch_size=3, seed=0)
    epoch = [next(stream) for _ in range(3)]  # 10 // 3 = 3 batches, one window left out
    starts = sorted(int(row[0]) for b in epoch for row in b)
    assert len(set(starts)) == 9 and all((s - 1) % 4 == 0 for s in starts)
    second = [next(stream) for _ in range(3)]
    assert [b.tolist() for b in second] != [b.tolist() for b in epoch]
    assert [b.shape[0] for b in windows.in_order(4)] == [4, 4, 2]


def test_data_parallel_ranks_share_one_permutation_and_never_see_the_same_window_in_an_epoch() -> None:
    windows = tok.Windows(np.arange(1, 4 * 50 + 2, dtype=np.uint16), sequence=4)  # 50 windows
    one = windows.shuffled(batch_size=4, seed=11)
    single = [next(one) for _ in range(12)]  # 50 // 4 = 12 batches in epoch 0
    ranks = [windows.shuffled(batch_size=2, seed=11, rank=r, world=2) for r in range(2)]
    for step, batch in enumerate(single):
        shares = [next(stream) for stream in ranks]
        np.testing.assert_array_equal(np.concatenate(shares), batch)  # the global batch, split in rank order
        assert set(shares[0][:, 0]).isdisjoint(shares[1][:, 0]), step
    epoch = [int(row[0]) for r in range(2) for b in itertools.islice(windows.shuffled(2, 11, r, 2), 12) for row in b]
    assert len(epoch) == len(set(epoch)) == 48


def test_too_little_data_for_one_micro_batch_is_refused() -> None:
    with pytest.raises(UsageError, match="holds 2 windows of 5 tokens, fewer than one micro-batch of 4"):
        next(tok.Windows(np.arange(9), sequence=4).shuffled(batch_size=4, seed=0))


def test_the_command_line_writes_the_generated_token_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tok.main([str(tmp_path / "gen"), "--train", "3000", "--eval", "100"])
    opened = tok.open_token_file(tmp_path / "gen")
    assert opened.path == tmp_path / "gen" / "tokens.bin"
    assert (opened.train_tokens, opened.eval_tokens, opened.vocab_size) == (3000, 100, 256)
    assert opened.source is not None and opened.source.startswith("specbench-generated-text")
    assert "3000 + 100 tokens, vocabulary 256" in capsys.readouterr().out
