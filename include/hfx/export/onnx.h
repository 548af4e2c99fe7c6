// hfx/export/onnx.h — the ONNX backend's entry point.
//
// `make_exporter("onnx")` finds it through the exporter table; this header is for code that wants the
// backend directly. Files written by `export_model` / `export_for_generation` under OUT:
//   onnx/<component>.onnx        component = "model" (merged), "prefill", "decode" (or "forward")
//   onnx/<component>.onnx_data   with OnnxConfig::external_data (4096-aligned tensors)
// The CLI copies config.json, generation_config.json and the tokenizer files next to onnx/.
#pragma once
#include <memory>

#include "hfx/export/exporter.h"

namespace hfx {

/// The ONNX exporter (format "onnx").
std::unique_ptr<Exporter> make_onnx_exporter();

}  // namespace hfx
