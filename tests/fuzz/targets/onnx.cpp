// onnx/model.onnx as `hfx verify` reads it before running anything: the protobuf, metadata contracts, graph
// guards, external data names and the signature against a tiny llama; and the manifest's ModelProto scan.
#include <optional>

#include "fuzz/fuzz_support.h"
#include "hfx/artifact/manifest.h"
#include "verify/verify_internal.h"

void hfx_fuzz_onnx(const uint8_t* data, size_t size) {
  namespace d = hfx::verify::detail;
  auto model = hfx::fuzz::tiny_llama();
  const auto path = hfx::fuzz::put("onnx/onnx/model.onnx", data, size);
  hfx::fuzz::refused_or_read([&] {
    d::Context cx;
    cx.out = path.parent_path().parent_path();
    cx.model = model;
    d::OnnxComponent c;
    c.name = "model";
    c.path = path;
    c.rel = "onnx/model.onnx";
    d::check_onnx_static(cx, c, std::nullopt);
  });
  // What `hfx manifest` records of the graph, dumped as manifest.json is.
  hfx::fuzz::refused_or_read([&] { (void)hfx::artifact::onnx_model_info(path.string()).dump(); });
}
