"""Write the ONNX graph in each variant: as built (fp32, fp16), or int8-quantized.

Imported only when an artifact is missing (first use on a machine), since ``onnx`` and the
quantization tools are slower to import than everything needed at run time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from safetensors.numpy import load_file

__all__ = ["load_weights", "quantize_int8", "save"]

INT8_OPS = ("MatMul", "Attention")
"""Quantized: every linear layer (Q/K/V in ``Attention``, the output and feed-forward
``MatMul``). Embedding tables and layer norms stay float32: they cost little time and int8
tables would cost accuracy."""


def load_weights(path: Path) -> dict[str, np.ndarray]:
    return load_file(str(path))


def save(model: onnx.ModelProto, target: Path) -> None:
    onnx.checker.check_model(model)
    onnx.save_model(model, str(target))


def quantize_int8(model: onnx.ModelProto, target: Path) -> None:
    """Dynamic int8 quantization: int8 weights per output channel, uint8 activations per batch.

    Per-channel weights were measured to be needed (per-tensor weights drop the cosine to the
    fp32 vectors to ~0.94); ``reduce_range`` is off because the VNNI path does not saturate.
    The graph is already fused and typed, which is what ORT's pre-processing step would
    produce, so it is marked as such (this also keeps ``quantize_dynamic`` from calling
    ``logging.warning`` on the root logger, which would configure logging for the whole
    process).
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.ModelProto.FromString(model.SerializeToString())
    props = {p.key: p.value for p in model.metadata_props}
    props["onnx.quant.pre_process"] = "onnxruntime.quant"
    onnx.helper.set_model_props(model, props)
    quantize_dynamic(
        model,
        target,
        op_types_to_quantize=list(INT8_OPS),
        per_channel=True,
        reduce_range=False,
        weight_type=QuantType.QInt8,
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
