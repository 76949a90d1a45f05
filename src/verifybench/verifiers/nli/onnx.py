"""`runtime: onnx`: a transformers pair classifier run by ONNX Runtime with int8 weights.

The ONNX file is made from the model's own weights on first use: exported by `torch.onnx` (batch and
sequence axes dynamic), then quantized by `onnxruntime.quantization.quantize_dynamic` (int8 weights,
activations quantized per batch at run time; the matrix multiplications only, per output channel: on
the project's model the default per-tensor scheme, embeddings included, moved probabilities by up to
0.56, per-channel MatMul-only by 0.06). It is written under `onnx_dir`, keyed by the weights'
fingerprint and the export settings, whole or not at all (write, then rename), so later runs and other
processes load it directly. Needs the `onnx` extra (onnxruntime, onnx, ml_dtypes).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import numpy as np

from verifybench.errors import SuiteError

OPSET = 17
QUANT = "int8-dynamic-matmul-per-channel"


def require_onnx():
    try:
        import ml_dtypes  # noqa: F401  (onnxruntime's quantization imports it without declaring it)
        import onnx  # noqa: F401  (quantize_dynamic reads and writes the graph with it)
        import onnxruntime
    except ImportError as e:
        raise SuiteError(f"runtime: onnx needs onnxruntime, onnx and ml_dtypes ({e.name} is not installed); "
                         "pip install 'verifybench[onnx]'") from None
    return onnxruntime


def onnx_path(model_id: str, onnx_dir: str | Path) -> Path:
    key = hashlib.sha256(f"{model_id}|opset{OPSET}|{QUANT}".encode()).hexdigest()[:20]
    return Path(onnx_dir).expanduser() / key / "model.int8.onnx"


def export_int8(torch_model, input_names: list[str], target: Path) -> Path:
    """Export `torch_model` (a sequence classifier taking `input_names`) to an int8 ONNX file at `target`."""
    require_onnx()
    import inspect

    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Positional export arguments follow forward()'s order, not the tokenizer's (BERT's tokenizer lists
    # token_type_ids before attention_mask; forward takes attention_mask second).
    params = list(inspect.signature(torch_model.forward).parameters)
    input_names = sorted(input_names, key=lambda n: params.index(n) if n in params else len(params))
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        fp32, int8 = Path(tmp) / "model.onnx", Path(tmp) / "model.int8.onnx"
        # A padded dummy batch: traced with an all-ones mask, the attention code may drop the mask from
        # the graph, and padded batches would then attend to their padding.
        dummy = []
        for name in input_names:
            x = torch.ones((2, 8), dtype=torch.long)
            if name == "attention_mask":
                x[1, 5:] = 0
            elif name == "token_type_ids":
                x[:, :4] = 0
            dummy.append(x)
        axes = {name: {0: "batch", 1: "sequence"} for name in input_names}
        model = torch_model.float().eval()
        with torch.inference_mode():
            torch.onnx.export(model, tuple(dummy), str(fp32), input_names=input_names, output_names=["logits"],
                              dynamic_axes={**axes, "logits": {0: "batch"}}, opset_version=OPSET, dynamo=False)
        quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True,
                         op_types_to_quantize=["MatMul"])
        os.replace(int8, target)  # whole or absent: a killed export leaves nothing half-written
    return target


class OnnxSession:
    """An ONNX Runtime CPU session over int8 weights: padded numpy batches in, logits out."""

    def __init__(self, path: Path, threads: int | None = None):
        ort = require_onnx()
        opts = ort.SessionOptions()
        if threads:
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.input_names = [i.name for i in self.session.get_inputs()]

    def __call__(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        feed = {name: np.asarray(batch[name], dtype=np.int64) for name in self.input_names}
        return np.asarray(self.session.run(["logits"], feed)[0], dtype=np.float32)
