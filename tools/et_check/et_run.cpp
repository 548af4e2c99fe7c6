// tools/et_check/et_run.cpp — runs an hfx-exported ExecuTorch .pte on ExecuTorch's own C++ runtime.
//
// Loads the program with Program::Verification::InternalConsistency, runs the prompt through the
// method (default `forward(tokens int64 [1, n], input_pos int64 [n])`, the KV cache being the
// program's mutable buffers), then greedy decode steps one token at a time, and prints JSON: the
// logits the prefill returned (every position it returns), the greedy tokens, each step's argmax and
// max logit, prefill / per-token decode time, the program's methods, metadata-method values, the
// backends registered in this binary and the delegate calls of each method by backend. Linked with the
// portable kernels and the XNNPACK backend (both whole-archive, so their static registrations run).
//
//   et_run --model model.pte --tokens 1,2,3 [--decode 32] [--threads N] [--method forward]
//          [--mode auto|forward|state] [--logits all|last|none] [--over-max] [--out FILE]
//   et_run --model model.pte --replay DIR [--threads N] [--out FILE]
//          (the call fixtures of `hfx verify OUT --save-calls DIR`, any method: replay.h)
//
// Two program forms (--mode auto picks by the methods present):
//   forward  `forward(tokens [1, n], input_pos [n])`, the KV cache in mutable buffers (hfx's form for
//            decoders whose cache is K/V only, ExecuTorch's LLM-runner convention);
//   state    `prefill` and `decode` methods whose cache is plain inputs/outputs (hfx's form for SSM and
//            hybrid decoders: mamba, mamba2, lfm2, granitemoehybrid). Inputs are taken in the component's
//            declared order: the int64 ones are input_ids, attention_mask (all ones over past + new) and
//            position_ids where declared; the others are the cache leaves, fed from the previous call's
//            outputs 1.. in order (output 0 is the logits), each checked for rank and dtype.
// --over-max replaces the prompt with get_max_seq_len() + 1 tokens (the given ones, repeated): an
// out-of-contract call that the runtime must refuse. Any runtime failure (program load, method load,
// set_input, execute) prints {"error": {...}} with the runtime's Error code and name and exits 1; the
// runtime's own log lines (ET_LOG) go to stderr. Usage errors exit 2.
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/extension/threadpool/threadpool.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/error.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/executor/method_meta.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using executorch::aten::ScalarType;
using executorch::aten::Tensor;
using executorch::extension::make_tensor_ptr;
using executorch::extension::Module;
using executorch::extension::TensorPtr;
using executorch::runtime::Error;
using executorch::runtime::EValue;
using executorch::runtime::MethodMeta;
using executorch::runtime::Program;
using executorch::runtime::Result;

namespace {

// ── JSON output ──
std::string jstr(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        o += "\\\"";
        break;
      case '\\':
        o += "\\\\";
        break;
      case '\n':
        o += "\\n";
        break;
      case '\t':
        o += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          o += b;
        } else {
          o += c;
        }
    }
  }
  return o + "\"";
}
std::string jnum(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "\"nan\"" : (v > 0 ? "\"inf\"" : "\"-inf\"");
  char b[40];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}
template <typename T>
std::string jints(const std::vector<T>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); i++) o += (i ? "," : "") + std::to_string(v[i]);
  return o + "]";
}
std::string jfloats(const float* p, size_t n) {
  std::string o = "[";
  for (size_t i = 0; i < n; i++) o += (i ? "," : "") + jnum(p[i]);
  return o + "]";
}

const char* dtype_name(ScalarType t) {
  switch (t) {
    case ScalarType::Float:
      return "float32";
    case ScalarType::Half:
      return "float16";
    case ScalarType::BFloat16:
      return "bfloat16";
    case ScalarType::Double:
      return "float64";
    case ScalarType::Long:
      return "int64";
    case ScalarType::Int:
      return "int32";
    case ScalarType::Bool:
      return "bool";
    case ScalarType::Byte:
      return "uint8";
    case ScalarType::Char:
      return "int8";
    default:
      return "other";
  }
}
const char* tag_name(executorch::runtime::Tag t) {
  using executorch::runtime::Tag;
  switch (t) {
    case Tag::None:
      return "None";
    case Tag::Tensor:
      return "Tensor";
    case Tag::Int:
      return "Int";
    case Tag::Double:
      return "Double";
    case Tag::Bool:
      return "Bool";
    case Tag::String:
      return "String";
    default:
      return "other";
  }
}

struct Out {
  std::ostringstream body;  // the JSON object's members, comma-led
  std::string out_path;
  void add(const std::string& k, const std::string& v) { body << ",\n  " << jstr(k) << ": " << v; }
  void emit() {
    std::string s = "{\n  \"et_run\": 1" + body.str() + "\n}\n";
    if (out_path.empty()) {
      std::fwrite(s.data(), 1, s.size(), stdout);
    } else {
      std::ofstream f(out_path);
      f << s;
    }
  }
};

[[noreturn]] void fail(Out& out, const std::string& stage, Error e, const std::string& detail) {
  out.add("ok", "false");
  out.add("error", "{\"stage\": " + jstr(stage) + ", \"code\": " + std::to_string(static_cast<int>(e)) +
                       ", \"name\": " + jstr(executorch::runtime::to_string(e)) +
                       ", \"detail\": " + jstr(detail) + "}");
  out.emit();
  std::fprintf(stderr, "et_run: %s failed: %s (Error %d)%s%s\n", stage.c_str(),
               executorch::runtime::to_string(e), static_cast<int>(e), detail.empty() ? "" : ": ",
               detail.c_str());
  std::exit(1);
}

[[noreturn]] void usage(const char* msg) {
  std::fprintf(
      stderr,
      "et_run: %s\nusage: et_run --model FILE.pte --tokens ID,ID,... [--decode N=32] "
      "[--threads N] [--method forward] [--mode auto|forward|state] [--logits all|last|none] "
      "[--over-max] [--out FILE]\n       et_run --model FILE.pte --replay DIR [--threads N] [--out FILE]\n",
      msg);
  std::exit(2);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// {"BackendName": number of delegate calls, ...} of a method.
std::string delegate_counts(const MethodMeta& mm) {
  std::vector<std::pair<std::string, int>> c;
  for (size_t i = 0; i < mm.num_backends(); i++) {
    auto b = mm.get_backend_name(i);
    std::string n = b.ok() ? b.get() : "?";
    auto it = std::find_if(c.begin(), c.end(), [&](const auto& p) { return p.first == n; });
    if (it == c.end())
      c.emplace_back(n, 1);
    else
      it->second++;
  }
  std::string o = "{";
  for (size_t i = 0; i < c.size(); i++)
    o += (i ? ", " : "") + jstr(c[i].first) + ": " + std::to_string(c[i].second);
  return o + "}";
}

std::string meta_json(const MethodMeta& mm) {
  std::string o = "{\"name\": " + jstr(mm.name()) + ", \"inputs\": [";
  for (size_t i = 0; i < mm.num_inputs(); i++) {
    auto tag = mm.input_tag(i);
    o += i ? ", " : "";
    o += "{\"tag\": " + jstr(tag.ok() ? tag_name(tag.get()) : "?");
    if (tag.ok() && tag.get() == executorch::runtime::Tag::Tensor) {
      auto ti = mm.input_tensor_meta(i);
      if (ti.ok()) {
        std::vector<int32_t> sz(ti->sizes().begin(), ti->sizes().end());
        o += ", \"dtype\": " + jstr(dtype_name(ti->scalar_type())) + ", \"sizes\": " + jints(sz);
      }
    }
    o += "}";
  }
  o += "], \"outputs\": [";
  for (size_t i = 0; i < mm.num_outputs(); i++) {
    auto tag = mm.output_tag(i);
    o += i ? ", " : "";
    o += "{\"tag\": " + jstr(tag.ok() ? tag_name(tag.get()) : "?");
    if (tag.ok() && tag.get() == executorch::runtime::Tag::Tensor) {
      auto ti = mm.output_tensor_meta(i);
      if (ti.ok()) {
        std::vector<int32_t> sz(ti->sizes().begin(), ti->sizes().end());
        o += ", \"dtype\": " + jstr(dtype_name(ti->scalar_type())) + ", \"sizes\": " + jints(sz);
      }
    }
    o += "}";
  }
  o += "], \"delegate_calls\": " + delegate_counts(mm) + ", \"memory_planned_buffers\": [";
  for (size_t i = 0; i < mm.num_memory_planned_buffers(); i++) {
    auto b = mm.memory_planned_buffer_size(i);
    o += (i ? ", " : "") + std::to_string(b.ok() ? b.get() : -1);
  }
  o += "], \"num_instructions\": " + std::to_string(mm.num_instructions()) + "}";
  return o;
}

std::string evalue_json(const EValue& v) {
  if (v.isInt()) return std::to_string(v.toInt());
  if (v.isBool()) return v.toBool() ? "true" : "false";
  if (v.isDouble()) return jnum(v.toDouble());
  if (v.isNone()) return "null";
  if (v.isTensor()) {
    const Tensor& t = v.toTensor();
    if (t.scalar_type() == ScalarType::Long && t.numel() <= 64) {
      std::vector<int64_t> xs(t.const_data_ptr<int64_t>(), t.const_data_ptr<int64_t>() + t.numel());
      return jints(xs);
    }
    return "\"tensor\"";
  }
  return "\"?\"";
}

// Logits of `t` [.., S, V] (any float dtype) as float, row-major.
std::vector<float> to_floats(const Tensor& t) {
  std::vector<float> v(t.numel());
  switch (t.scalar_type()) {
    case ScalarType::Float:
      std::memcpy(v.data(), t.const_data_ptr<float>(), v.size() * sizeof(float));
      break;
    case ScalarType::Half:
      for (size_t i = 0; i < v.size(); i++)
        v[i] = static_cast<float>(t.const_data_ptr<executorch::aten::Half>()[i]);
      break;
    case ScalarType::BFloat16:
      for (size_t i = 0; i < v.size(); i++)
        v[i] = static_cast<float>(t.const_data_ptr<executorch::aten::BFloat16>()[i]);
      break;
    case ScalarType::Double:
      for (size_t i = 0; i < v.size(); i++) v[i] = static_cast<float>(t.const_data_ptr<double>()[i]);
      break;
    default:
      v.clear();
  }
  return v;
}

size_t argmax(const float* p, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; i++)
    if (p[i] > p[best]) best = i;
  return best;
}

std::vector<int64_t> parse_ids(const std::string& s) {
  std::vector<int64_t> ids;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) ids.push_back(std::stoll(item));
  return ids;
}

// A tensor copied out of the runtime's memory (outputs live in the method's planned arena until its
// next call), fed back as an input.
struct Owned {
  std::vector<int32_t> sizes;
  ScalarType dtype = ScalarType::Float;
  std::vector<uint8_t> bytes;
};
Owned own(const Tensor& t) {
  Owned o;
  o.sizes.assign(t.sizes().begin(), t.sizes().end());
  o.dtype = t.scalar_type();
  o.bytes.assign(static_cast<const uint8_t*>(t.const_data_ptr()),
                 static_cast<const uint8_t*>(t.const_data_ptr()) + t.nbytes());
  return o;
}

}  // namespace

#include "replay.h"  // --replay: uses the helpers above

int main(int argc, char** argv) {
  std::string model, method, logits_mode = "all", tokens_arg, mode = "auto", replay_dir;
  int decode = 32, threads = 0;
  bool over_max = false;
  Out out;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    if (a == "--model")
      model = next();
    else if (a == "--tokens")
      tokens_arg = next();
    else if (a == "--decode")
      decode = std::stoi(next());
    else if (a == "--threads")
      threads = std::stoi(next());
    else if (a == "--method")
      method = next();
    else if (a == "--logits")
      logits_mode = next();
    else if (a == "--over-max")
      over_max = true;
    else if (a == "--out")
      out.out_path = next();
    else if (a == "--replay")
      replay_dir = next();
    else if (a == "-h" || a == "--help")
      usage("help");
    else
      usage(("unknown argument " + a).c_str());
  }
  if (model.empty()) usage("--model is required");
  if (mode != "auto" && mode != "forward" && mode != "state") usage("--mode auto|forward|state");
  if (logits_mode != "all" && logits_mode != "last" && logits_mode != "none") usage("--logits all|last|none");
  std::vector<int64_t> prompt = parse_ids(tokens_arg);
  if (prompt.empty() && replay_dir.empty()) usage("--tokens (or --replay DIR) is required");
  if (decode < 0) usage("--decode must be >= 0");

  executorch::runtime::runtime_init();
  out.add("model", jstr(model));

  // XNNPACK's threads come from extension/threadpool's global pthreadpool.
  if (threads > 0) {
    auto* tp = executorch::extension::threadpool::get_threadpool();
    if (!tp || !tp->_unsafe_reset_threadpool(static_cast<uint32_t>(threads)))
      fail(out, "threadpool", Error::Internal, "could not set the threadpool to " + std::to_string(threads));
  }
  {
    auto* tp = executorch::extension::threadpool::get_threadpool();
    out.add("threads", std::to_string(tp ? tp->get_thread_count() : 0));
  }
  {
    std::string o = "[";
    for (size_t i = 0; i < executorch::runtime::get_num_registered_backends(); i++) {
      auto n = executorch::runtime::get_backend_name(i);
      o += (i ? ", " : "") + jstr(n.ok() ? n.get() : "?");
    }
    out.add("registered_backends", o + "]");
  }

  auto t_load = std::chrono::steady_clock::now();
  Module mod(model, Module::LoadMode::File);
  if (Error e = mod.load(Program::Verification::InternalConsistency); e != Error::Ok)
    fail(out, "program load (Verification::InternalConsistency)", e, model);
  out.add("verification", jstr("InternalConsistency"));
  if (!replay_dir.empty()) return replay::run(mod, replay_dir, out);

  auto names = mod.method_names();
  if (!names.ok()) fail(out, "method_names", names.error(), "");
  std::vector<std::string> sorted(names->begin(), names->end());
  std::sort(sorted.begin(), sorted.end());
  {
    std::string o = "[";
    for (size_t i = 0; i < sorted.size(); i++) o += (i ? ", " : "") + jstr(sorted[i]);
    out.add("methods", o + "]");
  }

  auto has = [&](const char* n) { return std::find(sorted.begin(), sorted.end(), n) != sorted.end(); };
  if (mode == "auto")
    mode = (!method.empty() || has("forward")) ? "forward"
                                               : (has("prefill") && has("decode") ? "state" : "forward");
  if (mode == "forward" && method.empty()) method = "forward";
  if (mode == "state") method = "prefill";
  out.add("mode", jstr(mode));
  out.add("method", jstr(mode == "state" ? std::string("prefill + decode") : method));

  // Metadata methods: no inputs, constant outputs.
  int64_t max_seq_len = -1;
  {
    std::string o = "{";
    bool first = true;
    for (const std::string& n : sorted) {
      auto mm = mod.method_meta(n);
      if (!mm.ok() || mm->num_inputs() != 0) continue;
      auto r = mod.execute(n);
      std::string v;
      if (!r.ok()) {
        v = "{\"error\": " + jstr(executorch::runtime::to_string(r.error())) + "}";
      } else if (r->size() == 1) {
        v = evalue_json((*r)[0]);
      } else {
        v = "[";
        for (size_t i = 0; i < r->size(); i++) v += (i ? "," : "") + evalue_json((*r)[i]);
        v += "]";
      }
      if (n == "get_max_seq_len" && r.ok() && r->size() == 1 && (*r)[0].isInt())
        max_seq_len = (*r)[0].toInt();
      o += (first ? "" : ", ") + jstr(n) + ": " + v;
      first = false;
    }
    out.add("metadata", o + "}");
  }

  auto mm = mod.method_meta(method);
  if (!mm.ok()) fail(out, "method_meta(" + method + ")", mm.error(), "no method '" + method + "'");
  out.add("method_meta", meta_json(mm.get()));
  {
    // Per method: the delegate calls it makes, by backend ({} = all portable kernels).
    std::string o = "{";
    for (size_t i = 0; i < sorted.size(); i++) {
      auto m2 = mod.method_meta(sorted[i]);
      o += (i ? ", " : "") + jstr(sorted[i]) + ": " +
           (m2.ok() ? delegate_counts(m2.get()) : std::string("null"));
    }
    out.add("delegates", o + "}");
  }

  if (Error e = mod.load_method(method); e != Error::Ok) fail(out, "load_method(" + method + ")", e, "");
  if (mode == "state") {
    auto dm = mod.method_meta("decode");
    if (!dm.ok()) fail(out, "method_meta(decode)", dm.error(), "");
    out.add("decode_method_meta", meta_json(dm.get()));
    if (Error e = mod.load_method("decode"); e != Error::Ok) fail(out, "load_method(decode)", e, "");
  }
  out.add("load_ms", jnum(ms_since(t_load)));

  if (over_max) {
    if (max_seq_len < 0) fail(out, "over-max probe", Error::NotFound, "the program has no get_max_seq_len");
    std::vector<int64_t> p;
    while (static_cast<int64_t>(p.size()) < max_seq_len + 1) p.push_back(prompt[p.size() % prompt.size()]);
    prompt = p;
    out.add("probe", jstr("over-max: " + std::to_string(prompt.size()) + " tokens > get_max_seq_len " +
                          std::to_string(max_seq_len)));
  }
  const int64_t n = static_cast<int64_t>(prompt.size());
  out.add("prompt", jints(prompt));
  if (!over_max && max_seq_len > 0 && n + decode > max_seq_len) {
    int64_t d = std::max<int64_t>(0, max_seq_len - n);
    out.add("decode_capped", jstr("decode steps capped at " + std::to_string(d) + " by get_max_seq_len " +
                                  std::to_string(max_seq_len)));
    decode = static_cast<int>(d);
  }

  // The state form's cache leaves, carried from one call's outputs to the next call's inputs.
  std::vector<Owned> state;
  // One call: forward(tokens [1, k], input_pos [k] from pos0), or prefill/decode (state form) with
  // input_ids [1, k], attention_mask ones [1, pos0 + k], position_ids [1, k] from pos0 and the carried
  // leaves. Returns the logits (output 0) as float.
  auto run = [&](const std::vector<int64_t>& toks, int64_t pos0,
                 const std::string& stage) -> std::vector<float> {
    const int32_t k = static_cast<int32_t>(toks.size());
    std::vector<int64_t> pos(toks.size());
    for (size_t i = 0; i < pos.size(); i++) pos[i] = pos0 + static_cast<int64_t>(i);
    std::vector<TensorPtr> keep;
    std::vector<EValue> in;
    std::string m = method;
    if (mode == "forward") {
      keep.push_back(make_tensor_ptr({1, k}, std::vector<int64_t>(toks)));
      keep.push_back(make_tensor_ptr({k}, std::move(pos)));
    } else {
      m = pos0 == 0 ? "prefill" : "decode";
      auto meta = mod.method_meta(m);
      if (!meta.ok()) fail(out, stage, meta.error(), "method_meta(" + m + ")");
      size_t ints = 0, leaf = 0;
      for (size_t i = 0; i < meta->num_inputs(); i++) {
        auto ti = meta->input_tensor_meta(i);
        if (!ti.ok()) fail(out, stage, ti.error(), m + " input " + std::to_string(i) + " is not a tensor");
        if (ti->scalar_type() == ScalarType::Long) {
          if (ints == 0)
            keep.push_back(make_tensor_ptr({1, k}, std::vector<int64_t>(toks)));
          else if (ints == 1)
            keep.push_back(
                make_tensor_ptr({1, static_cast<int32_t>(pos0 + k)}, std::vector<int64_t>(pos0 + k, 1)));
          else if (ints == 2)
            keep.push_back(make_tensor_ptr({1, k}, std::vector<int64_t>(pos)));
          else
            fail(out, stage, Error::NotSupported, m + " has more than 3 int64 inputs");
          ints++;
        } else {
          if (leaf >= state.size())
            fail(out, stage, Error::InvalidArgument,
                 m + " input " + std::to_string(i) + " is cache leaf " + std::to_string(leaf) +
                     " but the previous call returned " + std::to_string(state.size()));
          Owned& o = state[leaf++];
          if (o.dtype != ti->scalar_type() || o.sizes.size() != ti->sizes().size())
            fail(out, stage, Error::InvalidArgument,
                 m + " input " + std::to_string(i) + ": carried leaf " + std::to_string(leaf - 1) +
                     " has dtype " + dtype_name(o.dtype) + " rank " + std::to_string(o.sizes.size()) +
                     ", the method wants " + dtype_name(ti->scalar_type()) + " rank " +
                     std::to_string(ti->sizes().size()));
          keep.push_back(make_tensor_ptr(std::vector<int32_t>(o.sizes), o.bytes.data(), o.dtype));
        }
      }
      if (leaf != state.size())
        fail(out, stage, Error::InvalidArgument,
             m + " takes " + std::to_string(leaf) + " cache leaves, the previous call returned " +
                 std::to_string(state.size()));
    }
    for (auto& t : keep) in.emplace_back(*t);
    auto r = mod.execute(m, in);
    if (!r.ok())
      fail(out, stage, r.error(),
           std::to_string(toks.size()) + " tokens at position " + std::to_string(pos0));
    if (r->empty() || !(*r)[0].isTensor())
      fail(out, stage, Error::InvalidType, "the first output is not a tensor");
    const Tensor& lt = (*r)[0].toTensor();
    std::vector<float> f = to_floats(lt);
    if (f.empty())
      fail(out, stage, Error::InvalidType, std::string("logits of dtype ") + dtype_name(lt.scalar_type()));
    if (mode == "state") {
      state.clear();
      for (size_t i = 1; i < r->size(); i++) {
        if (!(*r)[i].isTensor())
          fail(out, stage, Error::InvalidType, m + " output " + std::to_string(i) + " is not a tensor");
        state.push_back(own((*r)[i].toTensor()));
      }
    }
    return f;
  };

  // Prefill.
  auto t0 = std::chrono::steady_clock::now();
  std::vector<float> logits = run(prompt, 0, method + " (prefill of " + std::to_string(n) + " tokens)");
  const std::string decode_method = mode == "state" ? "decode" : method;
  double prefill_ms = ms_since(t0);
  auto mm2 = mod.method_meta(method);
  // The vocabulary: the output's last dim (the returned tensor's own shape, from its element count).
  int64_t vocab = -1;
  {
    auto ti = mm2->output_tensor_meta(0);
    if (ti.ok() && !ti->sizes().empty()) vocab = ti->sizes()[ti->sizes().size() - 1];
  }
  if (vocab <= 0 || logits.size() % vocab)
    fail(out, "prefill", Error::InvalidProgram, "cannot infer the vocabulary");
  const int64_t rows = static_cast<int64_t>(logits.size()) / vocab;
  out.add("vocab", std::to_string(vocab));
  out.add("prompt_logits_rows", std::to_string(rows));
  if (logits_mode != "none") {
    std::string o = "[";
    for (int64_t r = logits_mode == "last" ? rows - 1 : 0; r < rows; r++)
      o += std::string(o.size() > 1 ? ",\n    " : "\n    ") + jfloats(logits.data() + r * vocab, vocab);
    out.add("prompt_logits", o + "]");
  }
  std::vector<int64_t> greedy, step_argmax;
  std::vector<double> step_max;
  int64_t tok = static_cast<int64_t>(argmax(logits.data() + (rows - 1) * vocab, vocab));
  greedy.push_back(tok);
  step_max.push_back(logits[(rows - 1) * vocab + tok]);

  // Decode: one token a call, at positions n, n+1, ...
  auto t1 = std::chrono::steady_clock::now();
  for (int s = 0; s < decode; s++) {
    std::vector<float> l = run({tok}, n + s, decode_method + " (decode step " + std::to_string(s + 1) + ")");
    const int64_t r = static_cast<int64_t>(l.size()) / vocab;
    tok = static_cast<int64_t>(argmax(l.data() + (r - 1) * vocab, vocab));
    step_argmax.push_back(tok);
    step_max.push_back(l[(r - 1) * vocab + tok]);
    greedy.push_back(tok);
  }
  double decode_ms = ms_since(t1);
  out.add("ok", "true");
  out.add("decode_steps", std::to_string(decode));
  out.add("greedy_tokens", jints(greedy));
  out.add("step_argmax", jints(step_argmax));
  {
    std::string o = "[";
    for (size_t i = 0; i < step_max.size(); i++) o += (i ? "," : "") + jnum(step_max[i]);
    out.add("step_max_logit", o + "]");
  }
  out.add("prefill_ms", jnum(prefill_ms));
  out.add("decode_ms_per_token", jnum(decode > 0 ? decode_ms / decode : 0.0));
  out.emit();
  return 0;
}
