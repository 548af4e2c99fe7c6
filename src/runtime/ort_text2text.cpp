// The ONNX Runtime text-to-text engine: onnx/encoder_model.onnx once per batch, then
// onnx/decoder_model_merged.onnx per token. The merged graph's first call gets empty pasts [B, H, 0, D]
// (self and cross); each call's present.N.* come back as the next call's past_key_values.N.*. A graph
// with `use_cache_branch` (Optimum's If-based merge) is fed false first, true after.
#include <filesystem>

#include "hfx/core/error.h"
#include "hfx/runtime/ort_session.h"
#include "hfx/runtime/text2text.h"

namespace hfx {
namespace fs = std::filesystem;

namespace {

constexpr const char* kComp = "generate";

class OrtSeq2Seq : public Seq2SeqEngine {
 public:
  OrtSeq2Seq(const std::string& dir, int threads) {
    rt::SessionOptions so;
    so.intra_op_threads = threads;
    fs::path onnx = fs::path(dir) / "onnx";
    for (const char* f : {"encoder_model.onnx", "decoder_model_merged.onnx"})
      HFX_CHECK(fs::exists(onnx / f), kComp, "expected {} in {} for text-to-text generation, got none", f,
                onnx.string());
    enc_ = std::make_unique<rt::OrtSession>(onnx / "encoder_model.onnx", so);
    dec_ = std::make_unique<rt::OrtSession>(onnx / "decoder_model_merged.onnx", so);
    cache_ = std::make_unique<rt::DecoderCache>(*dec_, kComp);
    for (const rt::IoInfo& i : dec_->inputs())
      if (i.name == "use_cache_branch") has_branch_ = true;
    const rt::IoInfo& logits = dec_->output("logits");
    HFX_CHECK(logits.shape.size() == 3 && logits.shape[2].fixed(), kComp,
              "expected logits [batch, seq, vocab], got {}", logits.shape_str());
    vocab_ = logits.shape[2].value;
  }
  std::string name() const override { return "ort"; }
  int64_t vocab_size() const override { return vocab_; }

  void encode(std::span<const int64_t> ids, std::span<const int64_t> mask, int64_t B, int64_t S) override {
    mask_ = rt::RtTensor::i64({B, S}, mask);
    rt::NamedTensors out = enc_->run(
        {{"input_ids", rt::RtTensor::i64({B, S}, ids)}, {"attention_mask", mask_}}, {"last_hidden_state"});
    hidden_ = std::move(out.at(0).second);
    cache_->reset(B);
    first_ = true;
  }

  void step(std::span<const int64_t> ids, int64_t B, std::vector<float>& logits) override {
    HFX_CHECK(!hidden_.shape.empty(), kComp, "expected encode() before a decoder step, got none");
    rt::NamedTensors feeds{{"input_ids", rt::RtTensor::i64({B, 1}, ids)},
                           {"encoder_attention_mask", mask_},
                           {"encoder_hidden_states", hidden_}};
    cache_->feed(feeds);
    if (has_branch_) {
      rt::RtTensor flag{"bool", {1}, {static_cast<uint8_t>(first_ ? 0 : 1)}};
      feeds.emplace_back("use_cache_branch", std::move(flag));
    }
    std::vector<std::string> fetch{"logits"};
    fetch.insert(fetch.end(), cache_->presents().begin(), cache_->presents().end());
    rt::NamedTensors out = dec_->run(feeds, fetch);
    cache_->take(out, 1);
    std::vector<float> l = out[0].second.to_f32();  // [B, 1, V]
    logits.assign(l.end() - B * vocab_, l.end());
    if (out[0].second.shape[1] != 1) {  // keep the last position of each row
      const int64_t T = out[0].second.shape[1];
      logits.resize(static_cast<size_t>(B * vocab_));
      for (int64_t r = 0; r < B; r++)
        std::copy(l.begin() + (r * T + T - 1) * vocab_, l.begin() + (r * T + T) * vocab_,
                  logits.begin() + r * vocab_);
    }
    first_ = false;
  }

 private:
  std::unique_ptr<rt::OrtSession> enc_, dec_;
  std::unique_ptr<rt::DecoderCache> cache_;
  bool has_branch_ = false, first_ = true;
  int64_t vocab_ = 0;
  rt::RtTensor mask_, hidden_;
};

}  // namespace

std::unique_ptr<Seq2SeqEngine> make_ort_seq2seq_engine(const std::string& dir, int threads) {
  return std::make_unique<OrtSeq2Seq>(dir, threads);
}

}  // namespace hfx
