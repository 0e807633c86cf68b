"""The stand-in model's tokenizer: a byte-level BPE trained here, on a synthetic corpus, so that
the revision's scheduler runs with a tokenizer as a served model's does (stop strings are
checked by decoding a request's tail, a grammar backend compiles against the vocabulary) and
nothing comes from a model hub.

Trained once per recipe and `tokenizers` version into the user's cache (the harness names the
folder in the job), under a lock; a second process waits for the first. The corpus mixes
prose-like lines of synthetic words with JSON objects, so the vocabulary holds word pieces,
punctuation and JSON fragments (quotes, braces, keys) as a served model's does; its size is the
stand-in model's (bench.real.driver.server.MODEL_CONFIG). Ids 0, 1 and 2 are pad, bos and eos,
as in that config.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import random
import shutil
from collections.abc import Iterator
from pathlib import Path

RECIPE = 1  # bump when the corpus or the training changes
SPECIAL = ("<pad>", "<s>", "</s>")
_LETTERS = "etaoinshrdlcumwfgypbvkjxqz"
_WORDS = 6000  # distinct synthetic words
_LINES = 60000  # corpus lines: enough merges for a 32k vocabulary in ~2 s
FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def _corpus(seed: int = 0) -> Iterator[str]:
    rng = random.Random(seed)
    words = ["".join(rng.choice(_LETTERS) for _ in range(rng.randint(2, 9))) for _ in range(_WORDS)]
    for _ in range(_LINES):
        if rng.random() < 0.3:
            obj = {
                rng.choice(words): rng.choice(words),
                "id": rng.randint(0, 10**6),
                "ok": rng.random() < 0.5,
                "items": [rng.choice(words) for _ in range(3)],
            }
            yield json.dumps(obj)
        else:
            n = rng.randint(5, 30)
            text = " ".join(
                w.capitalize() if rng.random() < 0.1 else w
                for w in (rng.choice(words) for _ in range(n))
            )
            yield text + rng.choice(".?!,:\n")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def available() -> bool:
    """Whether this environment can train and load the stand-in tokenizer."""
    return importlib.util.find_spec("tokenizers") is not None


def ensure(cache_root: str, vocab_size: int) -> Path:
    """The tokenizer's folder (tokenizer.json and its config), trained if missing."""
    import tokenizers

    folder = Path(cache_root) / f"bpe{vocab_size}-r{RECIPE}-tokenizers{tokenizers.__version__}"
    if all((folder / name).is_file() for name in FILES):
        return folder
    with _locked(folder.with_suffix(".lock")):
        if all((folder / name).is_file() for name in FILES):
            return folder
        tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        _train(tmp, vocab_size)
        if folder.exists():  # a partial folder left by a process that was killed
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    return folder


def _train(folder: Path, vocab_size: int) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer)
    tok.save(str(folder / "tokenizer.json"))
    pad, bos, eos = SPECIAL
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": bos,
        "eos_token": eos,
        "pad_token": pad,
        "model_max_length": 1 << 20,
        "add_bos_token": False,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    special = {"bos_token": bos, "eos_token": eos, "pad_token": pad}
    (folder / "special_tokens_map.json").write_text(json.dumps(special), encoding="utf-8")


def install(model_dir: Path, tokenizer_dir: Path) -> None:
    """The tokenizer's files beside the stand-in model's config (its tokenizer_path)."""
    for name in FILES:
        target = model_dir / name
        if not target.exists():
            os.symlink(tokenizer_dir / name, target)
