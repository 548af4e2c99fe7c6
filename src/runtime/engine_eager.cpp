// EagerEngine: the model library's own component `model` as a generation engine. Each step runs in a
// fresh EagerBuilder (so nothing a builder keeps grows with the length generated): it wraps the int64
// inputs and the cache tensors of the previous step, calls the component with logits_to_keep = 1, copies
// the [B, 1, V] logits out and carries every declared cache leaf
// (present.N.key → past_key_values.N.key, present_ssm.N → past_ssm.N, ...) to the next step, so KV and
// state-space caches run through the same code.
#include "hfx/core/error.h"
#include "hfx/models/model.h"
#include "hfx/runtime/generator.h"

namespace hfx {

struct EagerEngine::State {
  explicit State(const CausalLM& m) : decl(m.component("model")) {}
  ComponentDecl decl;
  std::vector<std::pair<std::string, Tensor>>
      leaves;  ///< the cache leaves of the last step, by past input name
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

bool EagerEngine::crop(int64_t length) {
  State& s = *state_;
  if (length <= 0 || length > s.past) return false;
  // Only KV leaves [B, H, P, D] have positions to cut; conv/ssm state leaves summarize the whole past.
  for (const CacheLeafDecl& c : s.decl.cache)
    if (c.kind != "key" && c.kind != "value") return false;
  for (const auto& [name, t] : s.leaves)
    if (t.dim() != 4 || t.size(2) != s.past) return false;
  for (auto& [name, t] : s.leaves) t = t.slice(2, 0, length).contiguous();
  s.past = length;
  return true;
}

void EagerEngine::step(std::span<const int64_t> input_ids, std::span<const int64_t> attention_mask,
                       std::span<const int64_t> position_ids, int64_t batch, int64_t seq,
                       std::vector<float>& logits) {
  State& s = *state_;
  const int64_t total = s.past + seq;
  HFX_CHECK(static_cast<int64_t>(input_ids.size()) == batch * seq, "generate",
            "expected {} input ids ([{}, {}]), got {}", batch * seq, batch, seq, input_ids.size());
  HFX_CHECK(static_cast<int64_t>(attention_mask.size()) == batch * total, "generate",
            "expected an attention mask of [{}, {}], got {} values", batch, total, attention_mask.size());
  HFX_CHECK(static_cast<int64_t>(position_ids.size()) == batch * seq, "generate",
            "expected position ids of [{}, {}], got {} values", batch, seq, position_ids.size());
  EagerBuilder b;
  NamedVars in{
      {"input_ids", b.wrap(Tensor::from_ints({batch, seq}, {input_ids.begin(), input_ids.end()}))},
      {"attention_mask",
       b.wrap(Tensor::from_ints({batch, total}, {attention_mask.begin(), attention_mask.end()}))},
      {"position_ids", b.wrap(Tensor::from_ints({batch, seq}, {position_ids.begin(), position_ids.end()}))}};
  for (const auto& [name, t] : s.leaves) in.emplace_back(name, b.wrap(t));
  NamedVars out = model_->call("model", b, in, CallOptions{1, true});
  s.leaves.clear();
  for (const CacheLeafDecl& c : s.decl.cache)
    if (Var v = get(out, c.present_output)) s.leaves.emplace_back(c.past_input, v.tensor());
  Var lv = get(out, "logits");
  HFX_CHECK(lv.defined(), "generate", "expected logits from component 'model' of {}, got none",
            model_->config().model_type);
  const Tensor& t = lv.tensor();  // [B, 1, V]
  HFX_CHECK(t.dim() == 3 && t.size(0) == batch, "generate", "expected logits [{}, 1, V], got {}", batch,
            shape_to_string(t.shape()));
  const int64_t V = t.size(2);
  Tensor last = t.select(1, t.size(1) - 1);  // [B, V]
  logits.resize(static_cast<size_t>(batch * V));
  copy_to_contiguous(last, logits.data(), DType::F32);
  s.past = total;
}

}  // namespace hfx
