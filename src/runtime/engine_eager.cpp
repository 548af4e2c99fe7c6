// EagerEngine: the model library's own forward as a generation engine. One EagerBuilder lives as long
// as the cache does (the cache's Vars belong to it); each step wraps the int64 inputs, runs forward with
// logits_to_keep = 1 and copies the [B, 1, V] logits out.
#include "hfx/core/error.h"
#include "hfx/models/model.h"
#include "hfx/runtime/generator.h"

namespace hfx {

struct EagerEngine::State {
  explicit State(const CausalLM& m) : cache(m.cache_layout()) {}
  EagerBuilder builder;
  DynamicCache cache;
  int64_t past = 0;
};

EagerEngine::EagerEngine(std::shared_ptr<const CausalLM> model) : model_(std::move(model)) {
  HFX_CHECK(model_ != nullptr, "generate", "expected a model for the eager engine, got none");
  state_ = std::make_unique<State>(*model_);
}

EagerEngine::~EagerEngine() = default;

int64_t EagerEngine::vocab_size() const { return model_->config().vocab_size; }

void EagerEngine::reset() { state_ = std::make_unique<State>(*model_); }

int64_t EagerEngine::past_length() const { return state_->past; }

void EagerEngine::step(std::span<const int64_t> input_ids, std::span<const int64_t> attention_mask,
                       std::span<const int64_t> position_ids, int64_t batch, int64_t seq, std::vector<float>& logits) {
  State& s = *state_;
  const int64_t total = s.past + seq;
  HFX_CHECK(static_cast<int64_t>(input_ids.size()) == batch * seq, "generate", "expected {} input ids ([{}, {}]), got {}",
            batch * seq, batch, seq, input_ids.size());
  HFX_CHECK(static_cast<int64_t>(attention_mask.size()) == batch * total, "generate",
            "expected an attention mask of [{}, {}], got {} values", batch, total, attention_mask.size());
  HFX_CHECK(static_cast<int64_t>(position_ids.size()) == batch * seq, "generate", "expected position ids of [{}, {}], got {} values",
            batch, seq, position_ids.size());
  ForwardArgs a;
  a.input_ids = s.builder.wrap(Tensor::from_ints({batch, seq}, {input_ids.begin(), input_ids.end()}));
  a.attention_mask = s.builder.wrap(Tensor::from_ints({batch, total}, {attention_mask.begin(), attention_mask.end()}));
  a.position_ids = s.builder.wrap(Tensor::from_ints({batch, seq}, {position_ids.begin(), position_ids.end()}));
  a.cache = &s.cache;
  a.logits_to_keep = 1;
  ForwardOut out = model_->forward(s.builder, a);
  const Tensor& t = out.logits.tensor();  // [B, 1, V]
  HFX_CHECK(t.dim() == 3 && t.size(0) == batch, "generate", "expected logits [{}, 1, V], got {}", batch, shape_to_string(t.shape()));
  const int64_t V = t.size(2);
  Tensor last = t.select(1, t.size(1) - 1);  // [B, V]
  logits.resize(static_cast<size_t>(batch * V));
  copy_to_contiguous(last, logits.data(), DType::F32);
  s.past = total;
}

}  // namespace hfx
