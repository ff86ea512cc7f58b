"""Token data for the LLM executor: the token file format, its reader and writer, and generated text.

A token file is two files side by side, usually `tokens.bin` and `tokens.json` in a folder that
`--data` names: `tokens.bin`, raw little-endian unsigned integers (uint16 or uint32), the training
tokens followed by the held-out tokens, read through a memory map; and `tokens.json`, a sidecar
that says how to read it:

    {"format": "specbench-tokens", "format_version": 1, "dtype": "uint16", "vocab_size": 50257,
     "train_tokens": 1000000, "eval_tokens": 10000, "source": "..."}

Documents are concatenated (with the tokenizer's separator, if any); training reads windows of
sequence + 1 tokens. The generated text ("specbench-generated-text") is English-like sentences from
a small probabilistic grammar, one byte a token (vocabulary 256), made by the project so that the
smoke profile trains to a loss target with no download. It is deterministic: its sha256 names it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from specbench.errors import UsageError

FORMAT = "specbench-tokens"
FORMAT_VERSION = 1
DTYPES: dict[str, np.dtype[Any]] = {"uint16": np.dtype("<u2"), "uint32": np.dtype("<u4")}
GENERATED_NAME = "specbench-generated-text"
GENERATED_VOCAB = 256
TRAIN_SEED = 20261129
EVAL_SEED = 20261130
_CHUNK_TOKENS = 1 << 22


@dataclass(frozen=True)
class TokenFile:
    """An opened token file: the memory-mapped tokens and what the sidecar says about them."""

    path: Path
    dtype: str
    vocab_size: int
    train_tokens: int
    eval_tokens: int
    source: str | None
    tokens: np.ndarray

    @property
    def train(self) -> np.ndarray:
        return self.tokens[: self.train_tokens]

    @property
    def eval(self) -> np.ndarray:
        return self.tokens[self.train_tokens : self.train_tokens + self.eval_tokens]


DEFAULT_NAME = "tokens.bin"


def token_path(path: Path) -> Path:
    """The .bin file: `path` itself, or tokens.bin inside the folder `path`."""
    return path / DEFAULT_NAME if path.is_dir() else path


def sidecar_path(path: Path) -> Path:
    return token_path(path).with_suffix(".json")


def _sidecar(path: Path) -> dict[str, Any]:
    side = sidecar_path(path)
    try:
        meta = json.loads(side.read_text())
    except FileNotFoundError as err:
        raise UsageError(f"--data {path}: its sidecar {side} is missing (see docs/llm.md, 'Token files')") from err
    except (OSError, ValueError) as err:
        raise UsageError(f"--data {path}: cannot read the sidecar {side}: {err}") from err
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise UsageError(f"{side}: expected a JSON object with format {FORMAT!r}, found {str(meta)[:80]!r}")
    if meta.get("format_version") != FORMAT_VERSION:
        raise UsageError(
            f"{side}: token file format version {meta.get('format_version')!r} not supported (expected {FORMAT_VERSION})"
        )
    if meta.get("dtype") not in DTYPES:
        raise UsageError(f"{side}: expected dtype one of {', '.join(DTYPES)}, found {meta.get('dtype')!r}")
    for key in ("vocab_size", "train_tokens", "eval_tokens"):
        value = meta.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < (1 if key == "vocab_size" else 0):
            raise UsageError(f"{side}: expected {key} to be a non-negative integer, found {value!r}")
    if meta["vocab_size"] > np.iinfo(DTYPES[meta["dtype"]]).max + 1:
        raise UsageError(f"{side}: vocab_size {meta['vocab_size']} does not fit dtype {meta['dtype']}")
    return meta


def open_token_file(path: Path) -> TokenFile:
    """Open `path` (a folder with tokens.bin, or a .bin file) through its sidecar; the size must match exactly."""
    path = token_path(path)
    if not path.is_file():
        raise UsageError(f"--data {path}: no such file (expected a token file NAME.bin with NAME.json beside it)")
    meta = _sidecar(path)
    dtype = DTYPES[meta["dtype"]]
    count = meta["train_tokens"] + meta["eval_tokens"]
    size = path.stat().st_size
    if size != count * dtype.itemsize:
        raise UsageError(
            f"--data {path}: expected {count} {meta['dtype']} tokens ({count * dtype.itemsize} bytes) as "
            f"{sidecar_path(path).name} says, found {size} bytes"
        )
    tokens = np.memmap(path, dtype=dtype, mode="r", shape=(count,)) if count else np.zeros(0, dtype=dtype)
    source = meta.get("source")
    return TokenFile(
        path=path,
        dtype=meta["dtype"],
        vocab_size=meta["vocab_size"],
        train_tokens=meta["train_tokens"],
        eval_tokens=meta["eval_tokens"],
        source=str(source) if source is not None else None,
        tokens=tokens,
    )


def scan(file: TokenFile) -> tuple[str, int]:
    """sha256 of the .bin file and its largest token id, in one streaming pass (remembered per file version)."""
    stat = file.path.stat()
    return _scan(str(file.path.resolve()), file.dtype, stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=8)
def _scan(path: str, dtype: str, size: int, mtime_ns: int) -> tuple[str, int]:
    digest = hashlib.sha256()
    largest = -1
    count = size // DTYPES[dtype].itemsize
    tokens = np.memmap(path, dtype=DTYPES[dtype], mode="r", shape=(count,)) if count else np.zeros(0)
    for start in range(0, count, _CHUNK_TOKENS):
        chunk = np.asarray(tokens[start : start + _CHUNK_TOKENS])
        digest.update(chunk.tobytes())
        largest = max(largest, int(chunk.max()))
    return digest.hexdigest(), largest


def write_token_file(path: Path, train: np.ndarray, eval_tokens: np.ndarray, vocab_size: int, source: str) -> TokenFile:
    """Write NAME.bin and NAME.json (each atomically; a folder `path` gets tokens.bin) and return it opened."""
    path = path / DEFAULT_NAME if path.suffix != ".bin" else path
    dtype_name = "uint16" if vocab_size <= 1 << 16 else "uint32"
    dtype = DTYPES[dtype_name]
    data = np.concatenate([np.asarray(train), np.asarray(eval_tokens)])
    if data.size and (int(data.min()) < 0 or int(data.max()) >= vocab_size):
        raise UsageError(f"token ids must lie in [0, {vocab_size}), found [{int(data.min())}, {int(data.max())}]")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    data.astype(dtype).tofile(tmp)
    os.replace(tmp, path)
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "dtype": dtype_name,
        "vocab_size": vocab_size,
        "train_tokens": len(train),
        "eval_tokens": len(eval_tokens),
        "source": source,
    }
    side = sidecar_path(path)
    tmp_side = side.with_name(side.name + ".tmp")
    tmp_side.write_text(json.dumps(meta, indent=2) + "\n")
    os.replace(tmp_side, side)
    return open_token_file(path)


# generated text

_DETERMINERS = ["the", "a", "every", "some", "this", "no"]
_ADJECTIVES = ["small", "red", "quiet", "old", "bright", "heavy", "green", "strange", "cold", "happy", "tall", "dark"]
_NOUNS = ["cat", "dog", "river", "teacher", "engine", "garden", "bird", "tower", "farmer", "window", "storm", "sailor"]
_VERBS = ["see", "like", "follow", "find", "push", "watch", "build", "move", "hear", "keep"]
_ADVERBS = ["slowly", "again", "today", "quietly", "often", "there"]
_PREPOSITIONS = ["near", "under", "behind", "with", "across"]
_CONJUNCTIONS = ["and", "but", "while", "because"]


@lru_cache(maxsize=16)
def _zipf_cumulative(n: int) -> np.ndarray:
    weights = 1.0 / np.arange(1, n + 1)
    return np.cumsum(weights / weights.sum())


class _Grammar:
    """S -> CLAUSE (CONJ CLAUSE)? '.'; CLAUSE -> NP VP; NP -> DET ADJ? N (PREP NP)?; VP -> V (NP | ADV).

    Verbs agree in number with their subject (cats see, a cat sees), a dependency across the
    noun phrase that a model must learn; word choices follow Zipf weights.
    """

    def __init__(self, seed: int) -> None:
        self.rng = np.random.Generator(np.random.PCG64(seed))

    def pick(self, words: list[str]) -> str:
        index = int(np.searchsorted(_zipf_cumulative(len(words)), self.rng.random(), side="right"))
        return words[min(index, len(words) - 1)]

    def noun_phrase(self, depth: int = 0) -> tuple[str, bool]:
        plural = bool(self.rng.random() < 0.3)
        det = "the" if plural else self.pick(_DETERMINERS)
        words = [det]
        if self.rng.random() < 0.5:
            words.append(self.pick(_ADJECTIVES))
        words.append(self.pick(_NOUNS) + ("s" if plural else ""))
        if depth == 0 and self.rng.random() < 0.2:
            words += [self.pick(_PREPOSITIONS), self.noun_phrase(depth + 1)[0]]
        return " ".join(words), plural

    def clause(self) -> str:
        subject, plural = self.noun_phrase()
        verb = self.pick(_VERBS)
        verb = verb if plural else verb + ("es" if verb.endswith(("ch", "sh")) else "s")
        rest = self.noun_phrase()[0] if self.rng.random() < 0.7 else self.pick(_ADVERBS)
        return f"{subject} {verb} {rest}"

    def sentence(self) -> str:
        text = self.clause()
        if self.rng.random() < 0.25:
            text += f" {self.pick(_CONJUNCTIONS)} {self.clause()}"
        return text + (".\n" if self.rng.random() < 0.2 else ". ")


@lru_cache(maxsize=4)
def generate_text(count: int, seed: int) -> np.ndarray:
    """`count` byte tokens (uint16) of generated text; the same count and seed give the same tokens."""
    grammar = _Grammar(seed)
    parts: list[str] = []
    length = 0
    while length < count:
        sentence = grammar.sentence()
        parts.append(sentence)
        length += len(sentence)
    data = np.frombuffer("".join(parts).encode("ascii"), dtype=np.uint8)[:count].astype(np.uint16)
    data.setflags(write=False)
    return data


def generated_splits(train_tokens: int, eval_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """The generated training and held-out tokens (different seeds, the same grammar)."""
    return generate_text(train_tokens, TRAIN_SEED), generate_text(eval_tokens, EVAL_SEED)


def arrays_sha256(*arrays: np.ndarray) -> str:
    digest = hashlib.sha256()
    for array in arrays:
        digest.update(np.ascontiguousarray(array, dtype=np.dtype("<u2")).tobytes())
    return digest.hexdigest()


# batches


@dataclass
class Windows:
    """Non-overlapping windows of `sequence` + 1 tokens over a token array (inputs and next-token targets)."""

    tokens: np.ndarray
    sequence: int

    def __post_init__(self) -> None:
        self.count = max(0, (len(self.tokens) - 1) // self.sequence)

    def batch(self, indices: np.ndarray) -> np.ndarray:
        """int64 array [len(indices), sequence + 1]."""
        starts = indices.astype(np.int64) * self.sequence
        offsets = np.arange(self.sequence + 1, dtype=np.int64)
        return np.asarray(self.tokens[starts[:, None] + offsets[None, :]], dtype=np.int64)

    def shuffled(self, batch_size: int, seed: int, rank: int = 0, world: int = 1) -> Iterator[np.ndarray]:
        """Endless batches of `batch_size` for this rank, a fresh permutation every epoch.

        Every rank draws the same permutation (from `seed` and the epoch) and takes its own share of
        each global batch of `batch_size` x `world` windows, so data-parallel ranks never see the same
        window in one epoch; the last partial global batch of each epoch is dropped.
        """
        global_batch = batch_size * world
        if self.count < global_batch:
            raise UsageError(
                f"the token data holds {self.count} windows of {self.sequence + 1} tokens, "
                f"fewer than one micro-batch of {batch_size} on each of {world} process(es)"
            )
        epoch = 0
        while True:
            order = np.random.Generator(np.random.PCG64([seed, epoch])).permutation(self.count)
            for start in range(0, self.count - global_batch + 1, global_batch):
                share = start + rank * batch_size
                yield self.batch(order[share : share + batch_size])
            epoch += 1

    def in_order(self, batch_size: int) -> Iterator[np.ndarray]:
        for start in range(0, self.count, batch_size):
            yield self.batch(np.arange(start, min(self.count, start + batch_size)))


def main(argv: list[str] | None = None) -> None:
    """Write the generated text as a token file: python -m specbench.data.tokens DIR --train N --eval M."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--train", type=int, default=262144, help="training tokens")
    parser.add_argument("--eval", type=int, default=16384, help="held-out tokens")
    args = parser.parse_args(argv)
    train, held_out = generated_splits(args.train, args.eval)
    written = write_token_file(args.out, train, held_out, GENERATED_VOCAB, f"{GENERATED_NAME} (specbench.data.tokens)")
    print(f"{written.path}: {written.train_tokens} + {written.eval_tokens} tokens, vocabulary {written.vocab_size}")


if __name__ == "__main__":
    main()
