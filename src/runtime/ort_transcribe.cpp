// The ONNX Runtime speech engine: onnx/encoder_model.onnx (input_features → last_hidden_state) once per
// clip, then onnx/decoder_model_merged.onnx per call, fed as Transformers.js feeds it: the prompt with
// empty pasts [B, H, 0, D] (self and cross) first, then one token with the previous present.N.* as
// past_key_values.N.*; no encoder attention mask (Whisper has none).
#include <filesystem>

#include "hfx/core/error.h"
#include "hfx/runtime/ort_session.h"
#include "hfx/runtime/transcribe.h"

namespace hfx {
namespace fs = std::filesystem;

namespace {

constexpr const char* kComp = "transcribe";

class OrtSpeech : public SpeechSeq2SeqEngine {
 public:
  OrtSpeech(const std::string& dir, int threads) {
    rt::SessionOptions so;
    so.intra_op_threads = threads;
    fs::path onnx = fs::path(dir) / "onnx";
    for (const char* f : {"encoder_model.onnx", "decoder_model_merged.onnx"})
      HFX_CHECK(fs::exists(onnx / f), kComp, "expected {} in {} for transcription, got none", f,
                onnx.string());
    enc_ = std::make_unique<rt::OrtSession>(onnx / "encoder_model.onnx", so);
    dec_ = std::make_unique<rt::OrtSession>(onnx / "decoder_model_merged.onnx", so);
    cache_ = std::make_unique<rt::DecoderCache>(*dec_, kComp);
    const rt::IoInfo& logits = dec_->output("logits");
    HFX_CHECK(logits.shape.size() == 3 && logits.shape[2].fixed(), kComp,
              "expected logits [batch, seq, vocab], got {}", logits.shape_str());
    vocab_ = logits.shape[2].value;
  }
  std::string name() const override { return "ort"; }
  void reset_decoder() override { cache_->reset(batch_); }
  int64_t vocab_size() const override { return vocab_; }

  void encode(std::span<const float> f, int64_t B, int64_t mels, int64_t frames) override {
    rt::NamedTensors out =
        enc_->run({{"input_features", rt::RtTensor::f32({B, mels, frames}, f)}}, {"last_hidden_state"});
    hidden_ = std::move(out.at(0).second);
    batch_ = B;
    cache_->reset(B);
  }

  void step(std::span<const int64_t> ids, int64_t B, int64_t S, std::vector<float>& logits) override {
    HFX_CHECK(!hidden_.shape.empty(), kComp, "expected encode() before a decoder step, got none");
    rt::NamedTensors feeds{{"input_ids", rt::RtTensor::i64({B, S}, ids)}, {"encoder_hidden_states", hidden_}};
    cache_->feed(feeds);
    std::vector<std::string> fetch{"logits"};
    fetch.insert(fetch.end(), cache_->presents().begin(), cache_->presents().end());
    rt::NamedTensors out = dec_->run(feeds, fetch);
    cache_->take(out, 1);
    const std::vector<float> l = out[0].second.to_f32();  // [B, T, V]
    const int64_t T = out[0].second.shape[1];
    logits.resize(static_cast<size_t>(B * vocab_));
    for (int64_t r = 0; r < B; r++)
      std::copy(l.begin() + (r * T + T - 1) * vocab_, l.begin() + (r * T + T) * vocab_,
                logits.begin() + r * vocab_);
  }

 private:
  std::unique_ptr<rt::OrtSession> enc_, dec_;
  std::unique_ptr<rt::DecoderCache> cache_;
  int64_t vocab_ = 0, batch_ = 1;
  rt::RtTensor hidden_;
};

}  // namespace

std::unique_ptr<SpeechSeq2SeqEngine> make_ort_speech_engine(const std::string& dir, int threads) {
  return std::make_unique<OrtSpeech>(dir, threads);
}

}  // namespace hfx
