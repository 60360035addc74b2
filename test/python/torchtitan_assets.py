"""Tiny torchtitan assets made here, with no network: a byte-level BPE tokenizer and a
`c4_test`-shaped text data set (`tests/assets/c4_test/data.json`, one `{"text": ...}` per line).

torchtitan's `llama3_debugmodel` config reads `./tests/assets/tokenizer` and the `c4_test` data
set from `./tests/assets/c4_test`, relative to the working directory. `write_assets(root)` writes
both under `root`, so `torchrun -m torchtitan.train --module llama3 --config llama3_debugmodel`
run in `root` finds them. The text is pseudo-English from a fixed seed (a small vocabulary with
a Zipf-like word distribution, so the loss has something to learn and falls).

    python test/python/torchtitan_assets.py DIR [--tokenizer-from DIR]   # writes DIR/tests/assets
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from pathlib import Path

_SYLLABLES = ["ka", "lo", "mi", "ne", "ra", "su", "ti", "vo", "ze", "po", "da", "fi", "gu",
              "he", "ja", "ku", "ly", "mo", "nu", "pe", "qi", "ro", "sa", "te", "ul", "va"]

SPECIAL_TOKENS = ["<|begin_of_text|>", "<|end_of_text|>", "<|pad|>"]


def _words(rng: random.Random, n: int) -> list[str]:
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 3))))
    return sorted(words)


def make_texts(num_docs: int = 400, seed: int = 0) -> list[str]:
    """Documents of 20 to 80 sentences of a 300-word vocabulary, Zipf-distributed."""
    rng = random.Random(seed)
    vocab = _words(rng, 300)
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    docs = []
    for _ in range(num_docs):
        sentences = []
        for _ in range(rng.randint(20, 80)):
            words = rng.choices(vocab, weights, k=rng.randint(4, 14))
            sentences.append(" ".join(words).capitalize() + rng.choice([".", ".", "!", "?"]))
        docs.append(" ".join(sentences))
    return docs


def write_tokenizer(directory: Path, texts: list[str], vocab_size: int = 512) -> None:
    """A byte-level BPE `tokenizer.json` (HuggingFace `tokenizers`) trained on `texts`, and the
    `tokenizer_config.json` naming the BOS/EOS tokens torchtitan's HuggingFaceTokenizer reads."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(texts, trainer)
    directory.mkdir(parents=True, exist_ok=True)
    tok.save(str(directory / "tokenizer.json"))
    config = {"bos_token": SPECIAL_TOKENS[0], "eos_token": SPECIAL_TOKENS[1],
              "pad_token": SPECIAL_TOKENS[2], "model_max_length": 131072,
              "tokenizer_class": "PreTrainedTokenizerFast"}
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=1))


def write_data(directory: Path, texts: list[str], copies: int = 1) -> None:
    """`copies` > 1 writes the documents that many times over: split into `copies` contiguous
    shards (torchtitan's data-parallel ranks), every rank reads the same batches as one process
    reading the data set alone, so sharded runs' losses can be compared with a one-process run."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "data.json", "w") as f:
        for _ in range(copies):
            for text in texts:
                f.write(json.dumps({"text": text}) + "\n")


def write_assets(root: Path, num_docs: int = 400, vocab_size: int = 512,
                 tokenizer_from: Path | None = None, copies: int = 1) -> Path:
    """Writes `root/tests/assets/{tokenizer,c4_test}`; returns `root/tests/assets`."""
    assets = Path(root) / "tests" / "assets"
    texts = make_texts(num_docs)
    if tokenizer_from is not None:
        (assets / "tokenizer").mkdir(parents=True, exist_ok=True)
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(Path(tokenizer_from) / name, assets / "tokenizer" / name)
    else:
        write_tokenizer(assets / "tokenizer", texts, vocab_size)
    write_data(assets / "c4_test", texts, copies)
    return assets


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root")
    parser.add_argument("--docs", type=int, default=400)
    parser.add_argument("--tokenizer-from", type=Path, default=None,
                        help="copy tokenizer.json and tokenizer_config.json from this folder "
                             "instead of training one")
    parser.add_argument("--copies", type=int, default=1,
                        help="write the documents this many times (one copy per data-parallel "
                             "rank: every rank then reads what one process alone reads)")
    args = parser.parse_args()
    print(write_assets(Path(args.root), args.docs, tokenizer_from=args.tokenizer_from,
                       copies=args.copies))
