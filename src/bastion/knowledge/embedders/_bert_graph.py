"""Build a BERT sentence encoder as an ONNX graph, straight from its safetensors weights.

No PyTorch: the weights are read with ``safetensors.numpy`` and the graph is written with
``onnx.helper`` using ONNX Runtime's fused transformer operators (``com.microsoft``):
``EmbedLayerNormalization``, ``Attention``, ``SkipLayerNormalization`` and ``BiasGelu``. These
are the nodes ORT's own BERT optimizer produces from a PyTorch export; emitting them directly
gives the fused graph without relying on pattern matching, and ``quantize_dynamic`` turns
``Attention`` and ``MatMul`` into their int8 forms.

Mean pooling over the attention mask and L2 normalization (the sentence-transformers
``Pooling(mean)`` + ``Normalize`` modules) are part of the graph, so one run returns the
sentence embeddings.

Graph: inputs ``input_ids`` and ``attention_mask`` (int32, ``[batch, seq]``), output
``embeddings`` (float32, ``[batch, hidden]``). With ``half=True`` the encoder's weights and
activations are float16 (for CUDA) and the last hidden state is cast to float32 before
pooling; everything else is the same graph.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["GRAPH_VERSION", "BertShape", "build_bert_graph"]

GRAPH_VERSION = "2"
"""Bump when the graph below changes, so cached exports are rebuilt."""

_OPSET = 17
_MS = "com.microsoft"


@dataclass(frozen=True, kw_only=True)
class BertShape:
    """The parts of a Hugging Face ``config.json`` the graph needs."""

    hidden_size: int
    num_layers: int
    num_heads: int
    layer_norm_eps: float

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> BertShape:
        if config.get("model_type") != "bert" or config.get("hidden_act", "gelu") != "gelu":
            raise ValueError("only BERT encoders with exact GELU are supported")
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("only absolute position embeddings are supported")
        return cls(
            hidden_size=int(config["hidden_size"]),
            num_layers=int(config["num_hidden_layers"]),
            num_heads=int(config["num_attention_heads"]),
            layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)),
        )


class _Builder:
    def __init__(self, weights: Mapping[str, np.ndarray], dtype: type[np.floating[Any]]) -> None:
        self.weights = weights
        self.dtype = dtype
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.prefix = ""

    def w(self, key: str) -> np.ndarray:
        return np.asarray(self.weights[key], dtype=np.float32)

    def const(self, name: str, value: np.ndarray) -> str:
        """An encoder weight, in the encoder's dtype."""
        return self.const32(name, value.astype(self.dtype))

    def const32(self, name: str, value: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(
        self, op: str, inputs: list[str], outputs: list[str], *, ms: bool = False, **attrs: Any
    ) -> str:
        name = f"{self.prefix}{op}_{len(self.nodes)}"
        self.nodes.append(
            helper.make_node(op, inputs, outputs, name=name, domain=_MS if ms else "", **attrs)
        )
        return outputs[0]


def build_bert_graph(
    weights: Mapping[str, np.ndarray], shape: BertShape, *, half: bool = False
) -> onnx.ModelProto:
    """The encoder + mean pooling + L2 normalization, as one ONNX model."""
    b = _Builder(weights, np.float16 if half else np.float32)
    eps = shape.layer_norm_eps
    hidden = shape.hidden_size

    # Embeddings. Token type ids are always 0 for single sentences, so that row is folded into
    # the position table and the segment inputs are left out.
    pos = (
        b.w("embeddings.position_embeddings.weight")
        + b.w("embeddings.token_type_embeddings.weight")[0]
    )
    x = b.node(
        "EmbedLayerNormalization",
        [
            "input_ids",
            "",
            b.const("emb.word", b.w("embeddings.word_embeddings.weight")),
            b.const("emb.pos", pos),
            "",
            b.const("emb.ln.g", b.w("embeddings.LayerNorm.weight")),
            b.const("emb.ln.b", b.w("embeddings.LayerNorm.bias")),
        ],
        ["emb.out", "emb.mask_index"],
        ms=True,
        epsilon=eps,
    )

    for i in range(shape.num_layers):
        p = f"encoder.layer.{i}."
        att = p + "attention."
        qkv_w = np.concatenate(
            [b.w(att + f"self.{n}.weight").T for n in ("query", "key", "value")], axis=1
        )
        qkv_b = np.concatenate([b.w(att + f"self.{n}.bias") for n in ("query", "key", "value")])
        a = b.node(
            "Attention",
            [x, b.const(f"l{i}.qkv.w", qkv_w), b.const(f"l{i}.qkv.b", qkv_b), "attention_mask"],
            [f"l{i}.att"],
            ms=True,
            num_heads=shape.num_heads,
        )
        a = b.node(
            "MatMul", [a, b.const(f"l{i}.ao.w", b.w(att + "output.dense.weight").T)], [f"l{i}.ao"]
        )
        x = b.node(
            "SkipLayerNormalization",
            [
                a,
                x,
                b.const(f"l{i}.ln1.g", b.w(att + "output.LayerNorm.weight")),
                b.const(f"l{i}.ln1.b", b.w(att + "output.LayerNorm.bias")),
                b.const(f"l{i}.ao.b", b.w(att + "output.dense.bias")),
            ],
            [f"l{i}.ln1"],
            ms=True,
            epsilon=eps,
        )
        h = b.node(
            "MatMul",
            [x, b.const(f"l{i}.ff1.w", b.w(p + "intermediate.dense.weight").T)],
            [f"l{i}.ff1"],
        )
        h = b.node(
            "BiasGelu",
            [h, b.const(f"l{i}.ff1.b", b.w(p + "intermediate.dense.bias"))],
            [f"l{i}.gelu"],
            ms=True,
        )
        h = b.node(
            "MatMul", [h, b.const(f"l{i}.ff2.w", b.w(p + "output.dense.weight").T)], [f"l{i}.ff2"]
        )
        x = b.node(
            "SkipLayerNormalization",
            [
                h,
                x,
                b.const(f"l{i}.ln2.g", b.w(p + "output.LayerNorm.weight")),
                b.const(f"l{i}.ln2.b", b.w(p + "output.LayerNorm.bias")),
                b.const(f"l{i}.ff2.b", b.w(p + "output.dense.bias")),
            ],
            [f"l{i}.ln2"],
            ms=True,
            epsilon=eps,
        )

    # Mean pooling over real tokens, then L2 normalization (both in float32, also in the fp16
    # variant, which keeps the nodes named "pool/..." in float32).
    b.prefix = "pool/"
    if half:
        x = b.node("Cast", [x], ["pool.hidden32"], to=TensorProto.FLOAT)
    mask = b.node("Cast", ["attention_mask"], ["pool.mask"], to=TensorProto.FLOAT)
    mask3 = b.node("Unsqueeze", [mask, b.const32("pool.axis_last", np.array([2]))], ["pool.mask3"])
    axis1 = b.const32("pool.axis1", np.array([1]))
    summed = b.node("Mul", [x, mask3], ["pool.masked"])
    summed = b.node("ReduceSum", [summed, axis1], ["pool.sum"], keepdims=0)
    count = b.node("ReduceSum", [mask3, axis1], ["pool.count"], keepdims=0)
    count = b.node("Max", [count, b.const32("pool.min_count", np.array(1e-9, np.float32))], ["c"])
    mean = b.node("Div", [summed, count], ["pool.mean"])
    norm = b.node("ReduceL2", [mean], ["pool.norm"], axes=[1], keepdims=1)
    norm = b.node("Max", [norm, b.const32("pool.min_norm", np.array(1e-12, np.float32))], ["n"])
    b.node("Div", [mean, norm], ["embeddings"])

    graph = helper.make_graph(
        b.nodes,
        "bert_sentence_encoder",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT32, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT32, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", hidden])],
        initializer=b.inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", _OPSET), helper.make_opsetid(_MS, 1)],
        producer_name="bastion",
    )
    model.ir_version = 8
    return model
