// last_hidden_state of an exported encoder (OUT/onnx/model.onnx) in ONNX Runtime, for hfx/runtime/embed.h.
#include <filesystem>

#include "hfx/core/error.h"
#include "hfx/runtime/embed.h"
#include "hfx/runtime/ort_session.h"

namespace hfx::rt {

std::vector<float> ort_last_hidden_state(const std::string& dir, const TokenBatch& tb, int64_t* dim) {
  SessionOptions opt;
  opt.intra_op_threads = 0;
  OrtSession s(std::filesystem::path(dir) / "onnx" / "model.onnx", opt);
  NamedTensors feeds;
  for (const auto& in : s.inputs()) {
    if (in.name == "input_ids")
      feeds.push_back({in.name, RtTensor::i64({tb.batch, tb.seq}, tb.input_ids)});
    else if (in.name == "attention_mask")
      feeds.push_back({in.name, RtTensor::i64({tb.batch, tb.seq}, tb.attention_mask)});
    else if (in.name == "token_type_ids")
      feeds.push_back({in.name, RtTensor::zeros("int64", {tb.batch, tb.seq})});
    else
      HFX_THROW(
          "embed",
          "expected encoder inputs input_ids, attention_mask, token_type_ids in {}/onnx/model.onnx, got '{}'",
          dir, in.name);
  }
  bool has = false;
  for (const auto& o : s.outputs()) has = has || o.name == "last_hidden_state";
  if (!has)
    HFX_THROW("embed",
              "expected output last_hidden_state in {}/onnx/model.onnx (a base-model export), got none", dir);
  auto out = s.run(feeds, {"last_hidden_state"});
  const RtTensor& h = find_tensor(out, "last_hidden_state");
  if (h.shape.size() != 3)
    HFX_THROW("embed", "expected last_hidden_state of rank 3, got rank {}", h.shape.size());
  *dim = h.shape[2];
  return h.to_f32();
}

}  // namespace hfx::rt
