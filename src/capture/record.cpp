// Recording real generation calls and deriving the exported programs from them. A declared axis is a
// named dim; each recorded call gives every named dim a size (checked against the sums the declaration
// states, so a wrong declaration fails here, not in a runtime); a dim is dynamic in a program exactly
// when its size differs between the calls that program covers.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "capture/generation_loops.h"
#include "hfx/core/error.h"

namespace hfx {

using capture::generation_loop;
using capture::past_dims;
using capture::ProgramDecl;

std::vector<GenerationSample> default_generation_samples(int64_t vocab_size) {
  // Ids above the usual special ids (0..4) and below the vocabulary, deterministic.
  int64_t span = std::max<int64_t>(vocab_size - 5, 1);
  auto row = [&](int64_t n, int64_t salt) {
    std::vector<int64_t> r;
    for (int64_t i = 0; i < n; i++) r.push_back(5 + (17 * salt + 31 * i + 7) % span);
    return r;
  };
  return {GenerationSample{{row(5, 1)}, 3}, GenerationSample{{row(7, 2), row(4, 3)}, 3}};
}

std::vector<GenerationSample> generation_samples(const Model& model, const CaptureOptions& opts) {
  std::vector<GenerationSample> samples;
  for (const auto& prompts : opts.sample_prompts) samples.push_back(GenerationSample{prompts, 3});
  if (samples.empty()) samples = default_generation_samples(model.config().vocab_size);
  // A batch bound below a sample's rows (--max-batch 1, a device's batch): the sample keeps that many rows,
  // so every recorded call lies inside the range the export declares.
  for (auto& s : samples)
    if (opts.batch.max >= 1 && static_cast<int64_t>(s.prompts.size()) > opts.batch.max)
      s.prompts.resize(static_cast<size_t>(opts.batch.max));
  return samples;
}

std::vector<RecordedCall> record_generation(const Model& model, const std::vector<GenerationSample>& samples,
                                            bool eager) {
  std::vector<RecordedCall> calls;
  capture::CallRecorder rec(model, calls);
  const auto& loop = generation_loop(model.structure());
  for (const auto& s : samples) {
    if (s.prompts.empty())
      HFX_THROW("capture", "expected a generation sample with at least one prompt, got none");
    capture::LoopContext ctx(eager);
    loop.run(model, s, ctx, rec);
  }
  return calls;
}

namespace {

std::vector<std::string> split_sum(const std::string& axis) {
  std::vector<std::string> parts;
  for (size_t start = 0, plus;; start = plus + 1) {
    plus = axis.find('+', start);
    parts.push_back(axis.substr(start, plus == std::string::npos ? std::string::npos : plus - start));
    if (plus == std::string::npos) break;
  }
  return parts;
}

bool is_number(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

const RecordedInput* find_input(const RecordedCall& c, const std::string& name) {
  for (const auto& i : c.inputs)
    if (i.name == name) return &i;
  return nullptr;
}

// Every named dim's size in one call. Absent cache inputs of a merged program have size 0 along their
// named dims that no present input gives.
std::map<std::string, int64_t> call_sizes(const ComponentDecl& decl, const std::vector<std::string>& inputs,
                                          const RecordedCall& c, size_t index) {
  std::map<std::string, int64_t> size;
  for (const InputDecl& d : decl.inputs) {
    const RecordedInput* r = find_input(c, d.name);
    if (!r) continue;
    if (r->shape.size() != d.axes.size())
      HFX_THROW("capture",
                "expected input '{}' of '{}' to have rank {} as declared, got shape {} in call {} ({})",
                d.name, decl.name, d.axes.size(), shape_to_string(r->shape), index, c.kind);
    for (size_t a = 0; a < d.axes.size(); a++) {
      const std::string& ax = d.axes[a];
      if (ax.find('+') != std::string::npos || is_number(ax)) continue;
      auto [it, fresh] = size.emplace(ax, r->shape[a]);
      if (!fresh && it->second != r->shape[a])
        HFX_THROW(
            "capture",
            "expected dim '{}' to have one size in call {} ({}) of '{}', got {} and {} (input '{}' axis {})",
            ax, index, c.kind, decl.name, it->second, r->shape[a], d.name, a);
    }
  }
  for (const InputDecl& d : decl.inputs)
    if (!find_input(c, d.name) && std::find(inputs.begin(), inputs.end(), d.name) != inputs.end())
      for (const std::string& ax : d.axes)
        if (ax.find('+') == std::string::npos && !is_number(ax)) size.emplace(ax, 0);
  return size;
}

// Checks sums and fixed sizes of the declaration against the call.
void check_call(const ComponentDecl& decl, const RecordedCall& c, std::map<std::string, int64_t>& size,
                size_t index) {
  for (const InputDecl& d : decl.inputs) {
    const RecordedInput* r = find_input(c, d.name);
    if (!r) continue;
    for (size_t a = 0; a < d.axes.size(); a++) {
      int64_t want = 0;
      for (const std::string& p : split_sum(d.axes[a])) want += is_number(p) ? std::stoll(p) : size[p];
      if (want != r->shape[a])
        HFX_THROW("capture", "expected input '{}' axis {} of '{}' to be {} = {}, got {} in call {} ({})",
                  d.name, a, decl.name, d.axes[a], want, r->shape[a], index, c.kind);
    }
  }
}

DimSpec range_for(const std::string& dim, const CaptureOptions& o, const std::vector<int64_t>& seen,
                  bool memory) {
  bool varies = std::set<int64_t>(seen.begin(), seen.end()).size() > 1;
  int64_t hint = seen.back(), lo = *std::min_element(seen.begin(), seen.end());
  const int64_t hi_seen = *std::max_element(seen.begin(), seen.end());
  if (!o.dynamic || !varies) return DimSpec{"", false, hint, hint, hint};
  if (dim == "batch_size") return DimSpec{o.batch.name, true, o.batch.min, o.batch.max, hint};
  // A cross-attention memory holds the encoder's positions: the encoder sequence's range (0 in a merged
  // program's first call), not the self-attention past's (one position fewer: past + 1 new token).
  if (memory)
    return DimSpec{dim, true, lo == 0 ? 0 : std::max<int64_t>(o.sequence.min, 1),
                   std::max(o.sequence.max, hi_seen), hint};
  if (dim.rfind("past_", 0) == 0) {
    std::string name = dim == "past_sequence_length" ? o.past.name : dim;
    // A range covers every size the real calls had.
    const int64_t hi = std::max(o.past.max, hi_seen);
    return DimSpec{name, true, lo == 0 ? 0 : std::max<int64_t>(o.past.min, 1), hi, hint};
  }
  std::string name = dim == "sequence_length" ? o.sequence.name : dim;
  return DimSpec{name, true, o.sequence.min, o.sequence.max, hint};
}

ProgramSpec plan_one(const Model& model, const ProgramDecl& pd, const std::vector<RecordedCall>& calls,
                     const CaptureOptions& o) {
  ComponentDecl decl = model.component(pd.component);
  std::vector<const RecordedCall*> mine;
  for (const auto& c : calls)
    if (c.component == pd.component && std::count(pd.kinds.begin(), pd.kinds.end(), c.kind))
      mine.push_back(&c);
  if (mine.empty())
    HFX_THROW("capture", "expected recorded calls of kind(s) [{}] for program '{}' of {}, got none",
              fmt::join(pd.kinds, ", "), pd.name, model.config().model_type);
  ProgramSpec p;
  p.name = pd.name;
  p.component = pd.component;
  p.kinds = pd.kinds;
  for (const InputDecl& d : decl.inputs)
    for (const RecordedCall* c : mine)
      if (find_input(*c, d.name)) {
        p.inputs.push_back(d.name);
        break;
      }
  std::map<std::string, std::vector<int64_t>> seen;
  for (size_t i = 0; i < mine.size(); i++) {
    auto size = call_sizes(decl, p.inputs, *mine[i], i);
    check_call(decl, *mine[i], size, i);
    for (const auto& [dim, v] : size) seen[dim].push_back(v);
  }
  const std::set<std::string> memory = past_dims(decl).memory;
  for (const auto& [dim, v] : seen) p.dims[dim] = range_for(dim, o, v, memory.count(dim) > 0);
  // A length of its own (mamba's mask: total_sequence_length) that equals the new tokens in every call of
  // this program (prefill: no past, so the mask is as long as the prompt) is that same symbol, as
  // torch.export's duck sizing would make it: else the contract admits a mask longer than the prompt, a
  // call with no meaning (found by tests/interop/test_conformance.py).
  auto seq = seen.find("sequence_length");
  for (const auto& [dim, v] : seen)
    if (seq != seen.end() && dim != seq->first && dim != "batch_size" &&
        dim.find("past") == std::string::npos && v == seq->second && p.dims[dim].dynamic &&
        p.dims[seq->first].dynamic)
      p.dims[dim] = p.dims[seq->first];
  p.call.logits_to_keep = o.logits_to_keep;
  apply_explicit_dims(model, p, o.dynamic_shapes);
  // The memory is the encoder's output: never longer than the encoder states this program takes, also when
  // a user's Dim bounds them (decoder.encoder_attention_mask).
  // (Fixed encoder states, whisper's: the memory is at most that size.)
  int64_t enc_max = 0;
  for (const InputDecl& d : decl.inputs)
    if (d.name == "encoder_hidden_states" && d.axes.size() > 1) {
      if (is_number(d.axes[1]))
        enc_max = std::stoll(d.axes[1]);
      else if (auto e = p.dims.find(d.axes[1]); e != p.dims.end())
        enc_max = e->second.dynamic ? e->second.max : e->second.hint;
    }
  if (enc_max > 0)
    for (const std::string& dim : memory)
      if (auto m = p.dims.find(dim); m != p.dims.end() && m->second.dynamic)
        m->second.max = std::max(m->second.min, std::min(m->second.max, enc_max));
  return p;
}

}  // namespace

std::vector<ProgramSpec> plan_generation(const Model& model, const std::vector<RecordedCall>& calls,
                                         const CaptureOptions& opts) {
  std::vector<ProgramSpec> out;
  for (const ProgramDecl& pd : generation_loop(model.structure()).programs)
    out.push_back(plan_one(model, pd, calls, opts));
  return out;
}

std::vector<ReplayCall> replay_calls(const Model& model, const ProgramSpec& program,
                                     const std::vector<RecordedCall>& calls) {
  ComponentDecl decl = model.component(program.component);
  std::vector<ReplayCall> out;
  for (size_t i = 0; i < calls.size(); i++) {
    const RecordedCall& c = calls[i];
    if (c.component != program.component || !std::count(program.kinds.begin(), program.kinds.end(), c.kind))
      continue;
    auto size = call_sizes(decl, program.inputs, c, i);
    ReplayCall r{c.kind, {}, {}};
    EagerBuilder b;
    NamedVars args;
    for (const std::string& name : program.inputs) {
      if (const RecordedInput* ri = find_input(c, name)) {
        if (!ri->value.defined())
          HFX_THROW("capture", "expected an eager recording (input values) to replay '{}', got shapes only",
                    program.name);
        r.inputs.emplace_back(name, ri->value);
        args.emplace_back(name, b.wrap(ri->value));
        continue;
      }
      for (const InputDecl& d : decl.inputs) {
        if (d.name != name) continue;
        Shape shape;
        for (const std::string& ax : d.axes) {
          int64_t n = 0;
          for (const std::string& p : split_sum(ax)) n += is_number(p) ? std::stoll(p) : size[p];
          shape.push_back(n);
        }
        r.inputs.emplace_back(name, Tensor::zeros(shape, d.dtype));
      }
    }
    for (auto& [name, v] : model.call(program.component, b, args, program.call))
      r.expected.emplace_back(name, v.tensor());
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<ProgramSpec> generation_programs(const Model& model, const CaptureOptions& opts) {
  return plan_generation(model, record_generation(model, generation_samples(model, opts)), opts);
}

}  // namespace hfx
