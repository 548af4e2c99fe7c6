// The ONNX Runtime vision-language engine: onnx/vision_encoder.onnx (pixel_values → image_features) once
// per prompt, onnx/embed_tokens.onnx (input_ids → inputs_embeds) for the prompt and each new token, and
// onnx/decoder_model_merged.onnx fed as Transformers.js feeds it: the prompt's merged embeddings with empty
// pasts [1, H, 0, D] first, then one token's embeddings with the previous present.N.* as
// past_key_values.N.*, an all-ones attention_mask and the positions after the past.
#include <algorithm>
#include <filesystem>

#include "hfx/core/error.h"
#include "hfx/runtime/image_text.h"
#include "hfx/runtime/ort_session.h"

namespace hfx::rt {
namespace fs = std::filesystem;

namespace {

constexpr const char* kComp = "generate";

class OrtImageText : public ImageTextEngine {
 public:
  OrtImageText(const std::string& dir, int threads) {
    SessionOptions so;
    so.intra_op_threads = threads;
    const fs::path onnx = fs::path(dir) / "onnx";
    for (const char* f : {"vision_encoder.onnx", "embed_tokens.onnx", "decoder_model_merged.onnx"})
      HFX_CHECK(fs::exists(onnx / f), kComp,
                "expected {} in {} for generation with images, got none; export the checkpoint with `hfx "
                "export CKPT --format onnx`",
                f, onnx.string());
    vision_ = std::make_unique<OrtSession>(onnx / "vision_encoder.onnx", so);
    embed_ = std::make_unique<OrtSession>(onnx / "embed_tokens.onnx", so);
    dec_ = std::make_unique<OrtSession>(onnx / "decoder_model_merged.onnx", so);
    cache_ = std::make_unique<DecoderCache>(*dec_, kComp);
    auto names = dec_->input_names();
    for (const std::string& n : dec_->overridable_input_names()) names.push_back(n);  // gemma3's default
    types_ = std::find(names.begin(), names.end(), "token_type_ids") != names.end();
  }
  std::string name() const override { return "ort"; }

  std::vector<float> encode_images(std::span<const float> pixels, const std::vector<int64_t>& pshape,
                                   std::span<const int64_t> grid_thw, std::vector<int64_t>& shape) override {
    NamedTensors feeds{{"pixel_values", RtTensor::f32(pshape, pixels)}};
    if (!grid_thw.empty())
      feeds.emplace_back("grid_thw", RtTensor::i64({static_cast<int64_t>(grid_thw.size()) / 3, 3}, grid_thw));
    NamedTensors out = vision_->run(feeds, {"image_features"});
    shape = out.at(0).second.shape;
    return out.at(0).second.to_f32();
  }

  std::vector<float> embed(std::span<const int64_t> ids) override {
    NamedTensors out = embed_->run({{"input_ids", RtTensor::i64({1, static_cast<int64_t>(ids.size())}, ids)}},
                                   {"inputs_embeds"});
    return out.at(0).second.to_f32();
  }

  void reset() override {
    cache_->reset(1);
    total_ = 0;
  }

  std::vector<float> step(std::span<const float> embeds, int64_t seq, std::span<const int64_t> types,
                          std::span<const int64_t> positions) override {
    const int64_t hidden = static_cast<int64_t>(embeds.size()) / seq;
    std::vector<int64_t> pos(static_cast<size_t>(seq));
    for (int64_t i = 0; i < seq; i++) pos[static_cast<size_t>(i)] = total_ + i;
    total_ += seq;
    const std::vector<int64_t> mask(static_cast<size_t>(total_), 1);
    const bool three = static_cast<int64_t>(positions.size()) == 3 * seq;
    NamedTensors feeds{
        {"inputs_embeds", RtTensor::f32({1, seq, hidden}, embeds)},
        {"attention_mask", RtTensor::i64({1, total_}, mask)},
        {"position_ids",
         three ? RtTensor::i64({3, 1, seq}, positions)
               : RtTensor::i64({1, seq}, positions.empty() ? std::span<const int64_t>(pos) : positions)}};
    if (types_) {
      std::vector<int64_t> t(static_cast<size_t>(seq), 0);
      std::copy(types.begin(), types.begin() + std::min<int64_t>(seq, static_cast<int64_t>(types.size())),
                t.begin());
      feeds.emplace_back("token_type_ids", RtTensor::i64({1, seq}, t));
    }
    cache_->feed(feeds);
    std::vector<std::string> fetch{"logits"};
    fetch.insert(fetch.end(), cache_->presents().begin(), cache_->presents().end());
    NamedTensors out = dec_->run(feeds, fetch);
    cache_->take(out, 1);
    const std::vector<float> l = out[0].second.to_f32();  // [1, T, V]
    const int64_t T = out[0].second.shape[1], V = out[0].second.shape[2];
    return {l.begin() + (T - 1) * V, l.end()};
  }

 private:
  std::unique_ptr<OrtSession> vision_, embed_, dec_;
  std::unique_ptr<DecoderCache> cache_;
  int64_t total_ = 0;
  bool types_ = false;  ///< the decoder takes token_type_ids (gemma3)
};

}  // namespace

std::unique_ptr<ImageTextEngine> make_ort_image_text_engine(const std::string& dir, int threads) {
  return std::make_unique<OrtImageText>(dir, threads);
}

}  // namespace hfx::rt
