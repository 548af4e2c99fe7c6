"""A script written for transformers.exporters (the HfExporters of transformers 5): it exports a small Llama for
generation to ONNX, torch.export and ExecuTorch and saves each export. To run it on hfx, change the one import
line to `from hfx.exporters import ...` (tests/python/test_example.py runs it so and loads every output in ONNX
Runtime, torch.export.load and ExecuTorch's runtime).

    python examples/python/export_like_transformers.py OUT
"""
import sys

import torch
import transformers
from transformers.exporters import DynamoConfig, DynamoExporter, ExecutorchConfig, ExecutorchExporter, OnnxConfig, OnnxExporter

out = sys.argv[1] if len(sys.argv) > 1 else "exported"
config = transformers.LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
torch.manual_seed(0)
model = transformers.LlamaForCausalLM(config).eval()
inputs = {"input_ids": torch.randint(0, config.vocab_size, (1, 8)),
          "attention_mask": torch.ones(1, 8, dtype=torch.long)}

for name, exporter, export_config in [
    ("onnx", OnnxExporter(), OnnxConfig(dynamic=True)),
    ("dynamo", DynamoExporter(), DynamoConfig(dynamic=True)),
    ("executorch", ExecutorchExporter(), ExecutorchConfig(dynamic=True)),
]:
    exported = exporter.export_for_generation(model, inputs, export_config)
    print(name, exported)
    exported.save_pretrained(f"{out}/{name}")
