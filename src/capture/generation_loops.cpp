// The generation loops, one per structure, and the programs each structure exports. The loops are
// greedy and short: they exist to make the real calls (names, dtypes, shapes, which inputs are caches)
// that the exported signatures are derived from, the way transformers' generate() makes them.
#include "capture/generation_loops.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "hfx/core/error.h"
#include "hfx/models/rope.h"
#include "hfx/ops/functional.h"

namespace hfx::capture {

LoopContext::LoopContext(bool eager) : eager_(eager) {}

Builder& LoopContext::builder() { return eager_ ? static_cast<Builder&>(eb_) : tb_; }

Var LoopContext::ints(const Shape& shape, const std::vector<int64_t>& values) {
  if (eager_) return eb_.wrap(Tensor::from_ints(shape, values));
  SymShape s(shape.begin(), shape.end());
  return tb_.input(fmt::format("in{}", inputs_++), TensorType{DType::I64, s});
}

Var LoopContext::floats(const Shape& shape, const std::vector<float>& values) {
  if (eager_) {
    Tensor t = Tensor::empty(shape, DType::F32);
    std::copy(values.begin(), values.end(), t.data<float>());
    return eb_.wrap(t);
  }
  SymShape s(shape.begin(), shape.end());
  return tb_.input(fmt::format("in{}", inputs_++), TensorType{DType::F32, s});
}

std::vector<int64_t> LoopContext::next_tokens(const Var& logits, int64_t rows) {
  if (!eager_) return std::vector<int64_t>(rows, 5);
  Var last = F::slice(logits, 1, logits.size(1) - 1, logits.size(1));
  Tensor t = F::argmax(last, -1).tensor().contiguous();
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.numel());
}

namespace {
Shape concrete(const Var& v, const std::string& name, const std::string& component) {
  Shape out;
  for (const Sym& d : v.shape()) {
    auto n = d.maybe_value();
    if (!n)
      HFX_THROW("capture", "expected a static size in input '{}' of '{}' while recording, got {}", name,
                component, d.str());
    out.push_back(*n);
  }
  return out;
}
}  // namespace

NamedVars CallRecorder::call(const std::string& kind, const std::string& component, LoopContext& ctx,
                             const NamedVars& inputs, const CallOptions& opts) {
  ComponentDecl decl = model_.component(component);
  NamedVars taken;
  RecordedCall rc{component, kind, {}};
  for (const InputDecl& d : decl.inputs) {
    Var v = get(inputs, d.name);
    if (!v) {
      if (!d.optional)
        HFX_THROW("capture", "expected the {} loop to give input '{}' of component '{}', got none", kind,
                  d.name, component);
      continue;
    }
    taken.emplace_back(d.name, v);
    bool cache = std::any_of(decl.cache.begin(), decl.cache.end(),
                             [&](const CacheLeafDecl& c) { return c.past_input == d.name; });
    rc.inputs.push_back(
        {d.name, v.dtype(), concrete(v, d.name, component), ctx.eager() ? v.tensor() : Tensor(), cache});
  }
  out_.push_back(std::move(rc));
  return model_.call(component, ctx.builder(), taken, opts);
}

namespace {

int64_t pad_id(const Model& m) {
  const ModelConfig& c = m.config();
  if (c.pad_token_id) return *c.pad_token_id;
  return c.eos_token_ids.empty() ? 0 : c.eos_token_ids.front();
}

struct Batch {
  int64_t rows = 0, len = 0;
  std::vector<int64_t> ids, mask;
};

// Pads prompts to one length: left for decoder-only generation (new tokens follow the prompt), right
// for encoders (as tokenizers pad them).
Batch pad(const GenerationSample& s, int64_t pad, bool left) {
  Batch b;
  b.rows = static_cast<int64_t>(s.prompts.size());
  for (const auto& p : s.prompts) b.len = std::max<int64_t>(b.len, static_cast<int64_t>(p.size()));
  for (const auto& p : s.prompts) {
    int64_t n = static_cast<int64_t>(p.size()), off = left ? b.len - n : 0;
    for (int64_t j = 0; j < b.len; j++) {
      bool tok = j >= off && j < off + n;
      b.ids.push_back(tok ? p[j - off] : pad);
      b.mask.push_back(tok ? 1 : 0);
    }
  }
  return b;
}

// present.* outputs become the next call's past_key_values.* inputs, by the component's cache leaves.
void carry_cache(const ComponentDecl& decl, const NamedVars& outs, NamedVars& next) {
  for (const CacheLeafDecl& c : decl.cache)
    if (Var v = get(outs, c.present_output)) next.emplace_back(c.past_input, v);
}

// The attention mask and positions of left-padded prompts through generation: a position counts the row's
// real tokens before it (as generate() derives position_ids from the mask); each step appends one token per
// row.
struct Positions {
  int64_t rows = 0, total = 0;
  std::vector<int64_t> mask, pos, last;
  explicit Positions(const Batch& in)
      : rows(in.rows), total(in.len), mask(in.mask), pos(in.ids.size()), last(in.rows) {
    for (int64_t r = 0; r < rows; r++) {
      for (int64_t j = 0, c = 0; j < total; j++) {
        c += mask[r * total + j];
        pos[r * total + j] = std::max<int64_t>(c - 1, 0);
      }
      last[r] = pos[r * total + total - 1];
    }
  }
  void step() {
    std::vector<int64_t> grown;
    for (int64_t r = 0; r < rows; r++) {
      grown.insert(grown.end(), mask.begin() + r * total, mask.begin() + (r + 1) * total);
      grown.push_back(1);
      last[r] += 1;
    }
    mask = std::move(grown);
    total += 1;
  }
};

void decoder_only(const Model& m, const GenerationSample& s, LoopContext& b, CallRecorder& rec) {
  Batch in = pad(s, pad_id(m), true);
  ComponentDecl decl = m.component("model");
  Positions p(in);
  NamedVars inputs{{"input_ids", b.ints({in.rows, in.len}, in.ids)},
                   {"attention_mask", b.ints({in.rows, in.len}, p.mask)},
                   {"position_ids", b.ints({in.rows, in.len}, p.pos)}};
  for (int64_t step = 0; step < s.max_new_tokens; step++) {
    NamedVars outs = rec.call(step == 0 ? "prefill" : "decode", "model", b, inputs, CallOptions{1, true});
    std::vector<int64_t> tok = b.next_tokens(get(outs, "logits"), in.rows);
    p.step();
    inputs = {{"input_ids", b.ints({in.rows, 1}, tok)},
              {"attention_mask", b.ints({in.rows, p.total}, p.mask)},
              {"position_ids", b.ints({in.rows, 1}, p.last)}};
    carry_cache(decl, outs, inputs);
  }
}

void encoder_only(const Model& m, const GenerationSample& s, LoopContext& b, CallRecorder& rec) {
  Batch in = pad(s, pad_id(m), false);
  std::vector<int64_t> zeros(in.ids.size(), 0);
  rec.call("model", "model", b,
           {{"input_ids", b.ints({in.rows, in.len}, in.ids)},
            {"attention_mask", b.ints({in.rows, in.len}, in.mask)},
            {"token_type_ids", b.ints({in.rows, in.len}, zeros)}});
}

int64_t decoder_start(const Model& m) {
  const auto& raw = m.config().raw;
  if (raw.contains("decoder_start_token_id") && raw["decoder_start_token_id"].is_number_integer())
    return raw["decoder_start_token_id"].get<int64_t>();
  return pad_id(m);
}

// An audio encoder (Whisper) takes input_features of its declared fixed [mel bins, frames]; the samples
// are a smooth pattern in the log-mel range. Its decoder starts from a 4-token prompt, as Whisper's
// generate() does (<|startoftranscript|> <|lang|> <|task|> <|notimestamps|>: config.json's
// forced_decoder_ids after the start, padded with the start), so the decoder's sequence axis is dynamic.
std::optional<InputDecl> audio_input(const Model& m) {
  for (const InputDecl& d : m.component("encoder").inputs)
    if (d.name == "input_features") return d;
  return std::nullopt;
}

// A float input of `rows` × the declaration's fixed trailing dims (log-mel features, pixels): a smooth
// pattern in the range such inputs have.
// A float input of `rows` rows from a fixed pattern; a named axis after the first (idefics3's num_images)
// gets `per` entries.
Var patterned_floats(const InputDecl& d, int64_t rows, LoopContext& b, int64_t per = 1) {
  Shape shape{rows};
  for (size_t i = 1; i < d.axes.size(); i++)
    shape.push_back(std::isdigit(static_cast<unsigned char>(d.axes[i][0])) ? std::stoll(d.axes[i]) : per);
  int64_t n = 1;
  for (int64_t x : shape) n *= x;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++)
    v[static_cast<size_t>(i)] = static_cast<float>(0.5 * std::sin(0.37 * static_cast<double>(i)));
  return b.floats(shape, v);
}

std::vector<int64_t> decoder_prompt(const Model& m, bool audio) {
  std::vector<int64_t> p{decoder_start(m)};
  if (!audio) return p;
  const auto& raw = m.config().raw;
  if (raw.contains("forced_decoder_ids") && raw["forced_decoder_ids"].is_array())
    for (const auto& f : raw["forced_decoder_ids"])
      if (f.is_array() && f.size() == 2 && f[1].is_number_integer() && p.size() < 4)
        p.push_back(f[1].get<int64_t>());
  while (p.size() < 4) p.push_back(p.front());
  return p;
}

void encoder_decoder(const Model& m, const GenerationSample& s, LoopContext& b, CallRecorder& rec) {
  Batch in = pad(s, pad_id(m), false);
  Var mask = b.ints({in.rows, in.len}, in.mask);
  const std::optional<InputDecl> audio = audio_input(m);
  NamedVars enc_in{{"input_ids", b.ints({in.rows, in.len}, in.ids)}, {"attention_mask", mask}};
  if (audio) enc_in = {{"input_features", patterned_floats(*audio, in.rows, b)}};
  NamedVars enc = rec.call("encoder", "encoder", b, enc_in);
  Var hidden = get(enc, "last_hidden_state");
  if (!hidden)
    HFX_THROW("capture", "expected the encoder of {} to return last_hidden_state, got none",
              m.config().model_type);
  ComponentDecl decl = m.component("decoder");
  const std::vector<int64_t> prompt = decoder_prompt(m, audio.has_value());
  std::vector<int64_t> tok;
  for (int64_t r = 0; r < in.rows; r++) tok.insert(tok.end(), prompt.begin(), prompt.end());
  NamedVars inputs{{"input_ids", b.ints({in.rows, static_cast<int64_t>(prompt.size())}, tok)},
                   {"encoder_attention_mask", mask},
                   {"encoder_hidden_states", hidden}};
  for (int64_t step = 0; step < s.max_new_tokens; step++) {
    NamedVars outs =
        rec.call(step == 0 ? "decoder" : "decoder_with_past", "decoder", b, inputs, CallOptions{1, true});
    tok = b.next_tokens(get(outs, "logits"), in.rows);
    inputs = {{"input_ids", b.ints({in.rows, 1}, tok)},
              {"encoder_attention_mask", mask},
              {"encoder_hidden_states", hidden}};
    carry_cache(decl, outs, inputs);
  }
}

// A vision-language sample: one image per row, its K image tokens right after the row's first token (where
// a chat template puts "<image>" after BOS). The pixels are a smooth pattern of the declared [C, H, W]; a
// prompt id equal to the image token is replaced, so a row has exactly K image tokens.
GenerationSample with_image_tokens(const GenerationSample& s, int64_t image_token, int64_t k) {
  GenerationSample r = s;
  for (auto& p : r.prompts) {
    for (int64_t& id : p)
      if (id == image_token) id = 1;
    p.insert(p.begin() + std::min<std::ptrdiff_t>(1, static_cast<std::ptrdiff_t>(p.size())),
             static_cast<size_t>(k), image_token);
  }
  return r;
}

// LlavaForConditionalGeneration's merge: the image features replace, in order, the rows of the image tokens.
// Each row's image run starts at `starts[r]` (known to the loop that placed it), so it is slices and concats.
Var merge_image_features(const Var& embeds, const Var& features, const std::vector<int64_t>& starts,
                         int64_t k) {
  std::vector<Var> rows;
  const Sym len = embeds.size(1);
  for (size_t r = 0; r < starts.size(); r++) {
    const int64_t ri = static_cast<int64_t>(r);
    Var e = F::slice(embeds, 0, ri, ri + 1);
    std::vector<Var> parts{F::slice(e, 1, 0, starts[r]), F::slice(features, 0, ri, ri + 1)};
    parts.push_back(F::slice(e, 1, starts[r] + k, len));
    rows.push_back(F::cat(parts, 1));
  }
  return F::cat(rows, 0);
}

// The vision encoder's call on `rows` sample images and its image_features as [rows, K, hidden].
// pixel_values [images, C, H, W] (llava, gemma3) or [batch, images, C, H, W] (idefics3: `rows` images per
// prompt, so the recorded calls vary the image count as they vary the batch); or qwen2_vl's flattened
// patches [patches, C·T·P·P] with grid_thw [images, 3]: one (1, 2m, 3m) grid per image (m: the merge size).
struct VisionCall {
  Var features;
  int64_t k = 0;  ///< image tokens per prompt
  std::vector<std::array<int64_t, 3>> grids;
  int64_t merge = 1;
};

VisionCall vision_call(const Model& m, int64_t rows, LoopContext& b, CallRecorder& rec) {
  const ComponentDecl decl = m.component("vision_encoder");
  const InputDecl pixels = decl.inputs.front();
  VisionCall v;
  NamedVars in;
  int64_t per = 1, k = 0;
  if (decl.inputs.size() > 1 && decl.inputs[1].name == "grid_thw") {
    const auto& raw = m.config().raw;
    if (raw.contains("vision_config") && raw["vision_config"].is_object())
      v.merge = raw["vision_config"].value("spatial_merge_size", int64_t{2});
    else
      v.merge = 2;
    v.grids.assign(static_cast<size_t>(rows), {1, 2 * v.merge, 3 * v.merge});
    std::vector<int64_t> g;
    for (const auto& x : v.grids) g.insert(g.end(), x.begin(), x.end());
    in = {{pixels.name, patterned_floats(pixels, rows * 6 * v.merge * v.merge, b)},
          {"grid_thw", b.ints({rows, 3}, g)}};
    k = 6;  // merged tokens per image: (2m · 3m) / m²
  } else {
    per = pixels.axes.size() == 5 ? rows : 1;
    in = {{pixels.name, patterned_floats(pixels, rows, b, per)}};
  }
  v.features = get(rec.call("vision_encoder", "vision_encoder", b, in), "image_features");
  const Var& f = v.features;
  const int64_t rank = f ? f.dim() : 0;
  const std::optional<int64_t> k0 = rank == 3 ? f.size(1).maybe_value() : std::optional<int64_t>(k);
  const std::optional<int64_t> hidden = rank >= 2 ? f.size(rank - 1).maybe_value() : std::nullopt;
  if (!k0 || !hidden || rank < 2)
    HFX_THROW("capture",
              "expected the vision_encoder of {} to return image_features [images, K, hidden] with a fixed "
              "K (or [tokens, hidden] with grid_thw), got none",
              m.config().model_type);
  v.k = *k0 * per;
  if (per > 1 || rank == 2) v.features = F::reshape(v.features, {rows, v.k, *hidden});
  return v;
}

int64_t config_token(const Model& m, std::initializer_list<const char*> keys) {
  const auto& raw = m.config().raw;
  for (const char* key : keys)
    if (raw.contains(key) && raw[key].is_number_integer()) return raw[key].get<int64_t>();
  HFX_THROW("capture", "expected config.json.{} of {} to be an integer, got none", *keys.begin(),
            m.config().model_type);
}

// qwen2_vl's position_ids [3, rows, len] of a left-padded batch (padding: 1, as get_rope_index leaves it)
// and each row's next decode position.
std::pair<std::vector<int64_t>, std::vector<int64_t>> mrope_batch(const Model& m, const Batch& in,
                                                                  int64_t image_token, const VisionCall& v) {
  const int64_t start = config_token(m, {"vision_start_token_id"});
  std::vector<int64_t> pos(static_cast<size_t>(3 * in.rows * in.len), 1), next;
  for (int64_t r = 0; r < in.rows; r++) {
    std::vector<int64_t> ids;
    for (int64_t j = 0; j < in.len; j++)
      if (in.mask[r * in.len + j]) ids.push_back(in.ids[r * in.len + j]);
    const MropePositions p = mrope_positions(ids, image_token, start, {v.grids[r]}, v.merge);
    const int64_t n = static_cast<int64_t>(ids.size()), off = in.len - n;
    for (int64_t d = 0; d < 3; d++)
      for (int64_t i = 0; i < n; i++) pos[(d * in.rows + r) * in.len + off + i] = p.pos[d * n + i];
    next.push_back(p.decode_position(in.len));
  }
  return {pos, next};
}

void vision_language(const Model& m, const GenerationSample& s, LoopContext& b, CallRecorder& rec) {
  const int64_t rows = static_cast<int64_t>(s.prompts.size());
  const VisionCall v = vision_call(m, rows, b, rec);
  const int64_t image_token = config_token(m, {"image_token_index", "image_token_id"});
  const bool mrope = !v.grids.empty();
  GenerationSample sample = with_image_tokens(s, image_token, v.k);
  if (mrope)  // Qwen2-VL's prompts open an image with <|vision_start|>
    for (auto& p : sample.prompts) p.insert(p.begin() + 1, config_token(m, {"vision_start_token_id"}));
  Batch in = pad(sample, pad_id(m), true);
  std::vector<int64_t> starts;
  for (int64_t r = 0; r < in.rows; r++)
    starts.push_back(std::find(in.ids.begin() + r * in.len, in.ids.begin() + (r + 1) * in.len, image_token) -
                     (in.ids.begin() + r * in.len));
  ComponentDecl decl = m.component("decoder");
  Positions p(in);
  auto [pos3, next] =
      mrope ? mrope_batch(m, in, image_token, v) : std::pair<std::vector<int64_t>, std::vector<int64_t>>{};
  NamedVars emb =
      rec.call("embed_tokens", "embed_tokens", b, {{"input_ids", b.ints({in.rows, in.len}, in.ids)}});
  NamedVars inputs{
      {"inputs_embeds", merge_image_features(get(emb, "inputs_embeds"), v.features, starts, v.k)},
      {"attention_mask", b.ints({in.rows, in.len}, p.mask)},
      {"position_ids", mrope ? b.ints({3, in.rows, in.len}, pos3) : b.ints({in.rows, in.len}, p.pos)}};
  // A decoder that takes token_type_ids (gemma3: image tokens attend to each other) gets 1 on image tokens.
  const bool types = std::any_of(decl.inputs.begin(), decl.inputs.end(),
                                 [](const InputDecl& d) { return d.name == "token_type_ids"; });
  if (types) {
    std::vector<int64_t> t(in.ids.size());
    for (size_t i = 0; i < t.size(); i++) t[i] = in.ids[i] == image_token ? 1 : 0;
    inputs.push_back({"token_type_ids", b.ints({in.rows, in.len}, t)});
  }
  for (int64_t step = 0; step < s.max_new_tokens; step++) {
    NamedVars outs = rec.call(step == 0 ? "prefill" : "decode", "decoder", b, inputs, CallOptions{1, true});
    std::vector<int64_t> tok = b.next_tokens(get(outs, "logits"), in.rows);
    p.step();
    emb = rec.call("embed_tokens", "embed_tokens", b, {{"input_ids", b.ints({in.rows, 1}, tok)}});
    std::vector<int64_t> next3;
    for (int64_t d = 0; d < 3 && mrope; d++) next3.insert(next3.end(), next.begin(), next.end());
    for (int64_t& x : next) x++;
    inputs = {{"inputs_embeds", get(emb, "inputs_embeds")},
              {"attention_mask", b.ints({in.rows, p.total}, p.mask)},
              {"position_ids", mrope ? b.ints({3, in.rows, 1}, next3) : b.ints({in.rows, 1}, p.last)}};
    if (types) inputs.push_back({"token_type_ids", b.ints({in.rows, 1}, std::vector<int64_t>(in.rows, 0))});
    carry_cache(decl, outs, inputs);
  }
}

}  // namespace

const GenerationLoop& generation_loop(Structure s) {
  static const std::vector<GenerationLoop> table = {
      {Structure::DecoderOnly,
       decoder_only,
       // ExecuTorch methods: used for decoders whose cache is state leaves; KV decoders get the static-cache
       // forward(tokens, input_pos) instead (src/export/executorch/executorch_exporter.cpp).
       {{"prefill", "model", {"prefill"}, "prefill"},
        {"decode", "model", {"decode"}, "decode"},
        {"model", "model", {"prefill", "decode"}, ""}}},
      {Structure::EncoderOnly, encoder_only, {{"model", "model", {"model"}, "forward"}}},
      {Structure::EncoderDecoder,
       encoder_decoder,
       {{"encoder_model", "encoder", {"encoder"}, "encoder"},
        {"decoder_model", "decoder", {"decoder"}, "decoder"},
        {"decoder_with_past_model", "decoder", {"decoder_with_past"}, "decoder_with_past"},
        {"decoder_model_merged", "decoder", {"decoder", "decoder_with_past"}, ""}}},
      // Transformers.js' and Optimum's vision-language layout (the merged decoder), the decoder's two call
      // kinds also on their own (a .pt2 program is one call kind); the ExecuTorch method names are those
      // of its multimodal runner.
      {Structure::VisionLanguage,
       vision_language,
       {{"vision_encoder", "vision_encoder", {"vision_encoder"}, "vision_encoder"},
        {"embed_tokens", "embed_tokens", {"embed_tokens"}, "token_embedding"},
        {"decoder_model", "decoder", {"prefill"}, ""},
        {"decoder_with_past_model", "decoder", {"decode"}, ""},
        {"decoder_model_merged", "decoder", {"prefill", "decode"}, "text_decoder"}}},
  };
  for (const auto& l : table)
    if (l.structure == s) return l;
  HFX_THROW("capture", "expected a generation loop for structure '{}', got none", structure_name(s));
}

PastDims past_dims(const ComponentDecl& decl) {
  PastDims r;
  for (const CacheLeafDecl& leaf : decl.cache)
    for (const InputDecl& d : decl.inputs)
      if (d.name == leaf.past_input)
        for (const std::string& ax : d.axes)
          if (ax.rfind("past_", 0) == 0)
            (leaf.layer_type == "cross_attention" ? r.memory : r.self).insert(ax);
  for (const std::string& ax : r.self) r.memory.erase(ax);
  return r;
}

}  // namespace hfx::capture
