// `hfx verify` of a GGUF export: the file is read back into the eager engine (read_back_gguf: its table
// against the exporter's plan, its weights against the checkpoint's within their type's rounding), then
// llama.cpp (node-llama-cpp's released build, llama_cpp_judge.mjs) runs it: prefill and decode logits against
// the eager model over the file's own weights at the bound of the file's type, greedy tokens teacher-forced,
// the tokenizer on a fixed corpus against hfx's (itself held to transformers' in the suite), and the chat
// template it carries rendered by @huggingface/jinja against hfx's rendering.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <random>
#include <set>

#include <fmt/format.h>

#include "hfx/core/error.h"
#include "hfx/export/gguf.h"
#include "hfx/runtime/generator.h"
#include "hfx/tokenizers/chat_template.h"
#include "hfx/tokenizers/tokenizer.h"
#include "hfx/verify/precision.h"
#include "hfx_gen/llama_cpp_judge_mjs.h"
#include "verify/gguf_verify.h"
#include "verify/verify_internal.h"

namespace hfx::verify::detail {
namespace fs = std::filesystem;
using nlohmann::json;

// llama.cpp's logits against the eager model on the file's weights, relative to max |logit|, per matrix type:
// its CPU kernels round the activations to the weights' dot type (f16 for f16, bf16 for bf16, q8_0 blocks of
// 32 for q8_0 / q5_0 / q4_0, q8_K blocks of 256 for the k-quants), which the eager model does not. The
// numbers tests/interop/test_gguf.py holds 19 checkpoints to (its LOGIT_BOUNDS and ROUTER_TIE: 1.6 to 3 times
// the largest errors measured); `tie` is the router margin (of the router's max |logit|) under which that
// rounding may pick another expert.
// An f32 file of a GELU model (Gemma, GPT-2): llama.cpp looks its GELU up in an f16 table (the eager model
// does the same, gelu_ggml), so a gate activation whose last f32 bit differs (another summation order) may
// land on the next f16 value: one f16 step (2^-11) in that activation, the f16 files' kind of error in a few
// places. Measured up to 2.7e-4 (gemma3_text, create-tiny's seed 0); bound 1e-3.
GgufBound gguf_bound(GgmlType t, bool ggml_gelu) {
  switch (t) {
    case GgmlType::F32:
      return {ggml_gelu ? 1e-3 : 1e-4, 1e-4};
    case GgmlType::F16:
      return {3e-3, 2e-3};
    case GgmlType::BF16:
      return {2e-2, 1e-2};
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:  // a Q5_K_M file's base type
    case GgmlType::Q6_K:
      return {1.2e-1, 3e-2};
    default:
      return {7e-2, 3e-2};
  }
}

// The corpus the tokenizers are compared on: words of several scripts, digits, punctuation, whitespace runs,
// code, emoji and special-token text, joined at random (seeded: the same strings every run).
std::vector<std::string> corpus() {
  static const char* const kPieces[] = {"hello",
                                        "world",
                                        "The",
                                        " quick",
                                        "brown",
                                        "fox",
                                        "naïve",
                                        "café",
                                        "Ünïcödé",
                                        "日本語",
                                        "中文字符",
                                        "한국어",
                                        "русский",
                                        "ελληνικά",
                                        "עברית",
                                        "العربية",
                                        "हिन्दी",
                                        "🙂",
                                        "👍🏽",
                                        "🇰🇷",
                                        "\t",
                                        "\n",
                                        "\r\n",
                                        "  ",
                                        "   ",
                                        "123",
                                        "4567",
                                        "3.14159",
                                        "1e-5",
                                        "def f(x):",
                                        "return x**2",
                                        "{\"a\": [1, 2]}",
                                        "if (a && b) {",
                                        "}",
                                        "<s>",
                                        "</s>",
                                        "<|im_start|>",
                                        "'s",
                                        "'ll",
                                        "don't",
                                        "I'M",
                                        "x_y",
                                        "a-b",
                                        "...",
                                        "?!",
                                        "$%^&*",
                                        "~",
                                        "`code`",
                                        "#include <x>",
                                        "->",
                                        "::",
                                        "\\n",
                                        "ǅ",
                                        "ﬁ",
                                        "\u200b"};
  static const char* const kSeps[] = {"", " ", "  ", "\n", "\t"};
  std::mt19937 rng(43);
  std::vector<std::string> out;
  for (int64_t i = 0; i < kCorpusStrings; i++) {
    const auto n = 1 + rng() % 8;
    const std::string sep = kSeps[rng() % std::size(kSeps)];
    std::string s;
    for (size_t j = 0; j < n; j++) s += (j ? sep : "") + std::string(kPieces[rng() % std::size(kPieces)]);
    out.push_back(std::move(s));
  }
  return out;
}

// Runs the judge script on `gguf` with `request`; its JSON, or throws with the script's last error line.
json run_judge(const std::string& node, const std::string& modules, const fs::path& gguf,
               const json& request) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("hfx_llama_cpp_judge_{}", ::getpid());
  fs::create_directories(dir);
  std::ofstream(dir / "judge.mjs") << kLlamaCppJudgeMjs;
  std::ofstream(dir / "request.json") << request.dump();
  const std::string cmd = fmt::format(
      "{} {} {} {} < {} > {} 2> {}", shell_quote(node), shell_quote((dir / "judge.mjs").string()),
      shell_quote(modules), shell_quote(gguf.string()), shell_quote((dir / "request.json").string()),
      shell_quote((dir / "out.json").string()), shell_quote((dir / "err.txt").string()));
  const int status = std::system(cmd.c_str());
  std::string out, err, line;
  std::ifstream o(dir / "out.json"), e(dir / "err.txt");
  while (std::getline(o, line))
    if (!line.empty()) out = line;
  while (std::getline(e, line))
    if (!line.empty()) err = line;
  fs::remove_all(dir);
  json j = json::parse(out, nullptr, false);
  HFX_CHECK(status == 0 && j.is_object(), "verify", "expected llama.cpp's judge to run {}, got exit {}: {}",
            gguf.filename().string(), WIFEXITED(status) ? WEXITSTATUS(status) : -1, err.empty() ? out : err);
  return j;
}

void judge_tokenizer(Context& cx, const std::string& file, const json& got,
                     const std::vector<std::string>& texts, const tok::Tokenizer& t,
                     const std::string& runtime) {
  int64_t differ = 0;
  std::string first;
  for (size_t i = 0; i < texts.size(); i++) {
    const std::vector<int32_t> want = t.encode(texts[i], false);
    std::vector<int32_t> have;
    for (const auto& x : got.at(i)) have.push_back(x.get<int32_t>());
    if (have == want) continue;
    if (differ++ == 0)
      first = fmt::format("{} gives [{}], hfx [{}]", json(texts[i]).dump(), fmt::join(have, ", "),
                          fmt::join(want, ", "));
  }
  cx.add(file, "runtime tokenizer", differ == 0 ? "passed" : "failed",
         differ == 0
             ? fmt::format("{} strings (unicode, whitespace, code) tokenized by {} as by hfx's tokenizer",
                           texts.size(), runtime)
             : fmt::format("expected {}'s token ids equal to hfx's on {} strings, got {} differing: {}",
                           runtime, texts.size(), differ, first));
}

namespace {

constexpr int64_t kPrefill = 8, kDecode = 4, kPrompt = 6, kCandidates = 64;

// The eager model over a sequence: its logits [S, V] and the first position where a mixture of experts'
// router is at a near-tie (its k-th and k+1-th logits closer than `tie` times its max |logit|; S when none).
// llama.cpp's rounding may pick the other expert there, and the change reaches every later position (through
// attention and recurrent states): only the positions before it are comparable.
struct EagerRun {
  std::vector<int64_t> ids;
  Tensor logits;
  int64_t first_tie = 0;
};
EagerRun eager_logits(const CausalLM& m, const std::vector<int64_t>& ids, double tie) {
  EagerBuilder b;
  b.collect_intermediates(true);
  const auto S = static_cast<int64_t>(ids.size());
  Tensor logits = forward_logits(m, ids, b);
  int64_t first = S;
  const auto k = m.config().raw.value("num_experts_per_tok", int64_t{0});
  for (const auto& [name, t] : b.intermediates()) {
    if (k <= 0 || !(name.ends_with(".mlp.gate") || name.ends_with(".mlp.gate.wg") ||
                    name.ends_with(".block_sparse_moe.gate") || name.ends_with(".router.layer") ||
                    name.ends_with(".feed_forward.router")))
      continue;
    const std::vector<float> r = t.to_floats();
    const int64_t E = t.shape().back();
    if (E <= k || static_cast<int64_t>(r.size()) != S * E) continue;
    float amax = 0;
    for (float v : r) amax = std::max(amax, std::fabs(v));
    for (int64_t s = 0; s < first; s++) {
      std::vector<float> row(r.begin() + s * E, r.begin() + (s + 1) * E);
      std::sort(row.begin(), row.end(), std::greater<>());
      if (row[static_cast<size_t>(k - 1)] - row[static_cast<size_t>(k)] < tie * amax) first = s;
    }
  }
  return {ids, logits.reshape({S, logits.shape().back()}).contiguous(), first};
}

// The sequence the logits are compared on: of kCandidates seeded ones, the first without a router near-tie,
// else the one whose first near-tie comes latest.
EagerRun probe_sequence(const CausalLM& m, double tie) {
  EagerRun best;
  for (int64_t salt = 7; salt < 7 + kCandidates && best.first_tie < kPrefill + kDecode; salt++) {
    EagerRun r = eager_logits(m, test_tokens(m.config().vocab_size, 0, kPrefill + kDecode, salt), tie);
    if (best.ids.empty() || r.first_tie > best.first_tie) best = std::move(r);
  }
  return best;
}

// The greedy prompt: of kCandidates seeded ones (a mixture of experts' only; otherwise the first), the first
// whose eager greedy continuation of `n` tokens meets no router near-tie, else the one that meets it latest.
std::vector<int64_t> greedy_prompt(const CausalLM& m, double tie, int64_t n) {
  const bool moe = m.config().raw.value("num_experts_per_tok", int64_t{0}) > 0;
  std::shared_ptr<const CausalLM> ref(std::shared_ptr<const CausalLM>(), &m);  // non-owning, for this call
  Generator g(std::make_unique<EagerEngine>(ref), nullptr, {});
  GenerationOptions go;
  go.max_new_tokens = n;
  go.ignore_eos = true;
  std::vector<int64_t> best;
  int64_t latest = -1;
  for (int64_t salt = 7; salt < 7 + (moe ? kCandidates : 1); salt++) {
    std::vector<int64_t> prompt = test_tokens(m.config().vocab_size, 1, kPrompt, salt), seq = prompt;
    const GenerationResult r = g.generate_ids({prompt}, go);
    seq.insert(seq.end(), r.ids[0].begin(), r.ids[0].end());
    const int64_t first = moe ? eager_logits(m, seq, tie).first_tie : static_cast<int64_t>(seq.size());
    if (first > latest) latest = first, best = prompt;
    if (first == static_cast<int64_t>(seq.size())) break;
  }
  return best;
}

tok::ChatInputs conversation() {
  tok::ChatInputs in;
  in.messages = nlohmann::ordered_json::array({{{"role", "system"}, {"content", "You are terse."}},
                                               {{"role", "user"}, {"content", "Name a prime.\nJust one."}},
                                               {{"role", "assistant"}, {"content", "7"}},
                                               {{"role", "user"}, {"content", "Another, café ☕?"}}});
  in.add_generation_prompt = true;
  return in;
}

}  // namespace

std::string llama_cpp_judge(std::string& node, std::string& why) {
  if (const char* j = std::getenv("HFX_LLAMA_CPP_JUDGE"); j && std::string(j) == "0") {
    why = "HFX_LLAMA_CPP_JUDGE=0";
    return "";
  }
  node = std::getenv("HFX_NODE") && *std::getenv("HFX_NODE") ? std::getenv("HFX_NODE") : "node";
  if (std::system(fmt::format("{} --version >/dev/null 2>&1", shell_quote(node)).c_str()) != 0) {
    why = fmt::format("no node to run llama.cpp's judge: '{}' did not run (set HFX_NODE, or install Node.js)",
                      node);
    return "";
  }
  std::vector<fs::path> tried;
  if (const char* m = std::getenv("HFX_NODE_MODULES"); m && *m) tried.emplace_back(m);
  std::error_code ec;
  fs::path d = fs::read_symlink("/proc/self/exe", ec).parent_path();
  for (int up = 0; up < 3 && !d.empty() && d != d.root_path(); up++, d = d.parent_path())
    tried.push_back(d / "deps" / "npm" / "node_modules");
  for (const fs::path& p : tried)
    if (fs::exists(p / "node-llama-cpp" / "dist" / "index.js") && fs::exists(p / "@huggingface" / "jinja"))
      return p.string();
  std::vector<std::string> names;
  for (const fs::path& p : tried) names.push_back(p.string());
  why = fmt::format(
      "no node_modules with node-llama-cpp and @huggingface/jinja (llama.cpp's judge): set HFX_NODE_MODULES "
      "(scripts/setup.sh installs them in deps/npm); looked at {}",
      fmt::join(names, ", "));
  return "";
}

namespace {

// llama.cpp's distributions against the eager logits: the worst |log p - log softmax(eager)| over the tokens
// both give a probability, relative to max |eager logit|, over the positions before the first router
// near-tie.
struct LogitsDiff {
  double rel = 0;
  int64_t judged = 0;
};
LogitsDiff compare_logits(const json& dists, const Tensor& eager, int64_t first_tie) {
  LogitsDiff d;
  const int64_t V = eager.shape().back();
  const float* e = eager.data<float>();
  double amax = 0;
  for (int64_t i = 0; i < eager.numel(); i++) amax = std::max(amax, std::fabs(static_cast<double>(e[i])));
  for (size_t s = 0; s < dists.size() && static_cast<int64_t>(s) < first_tie; s++) {
    const float* row = e + static_cast<int64_t>(s) * V;
    double mx = *std::max_element(row, row + V), sum = 0;
    for (int64_t i = 0; i < V; i++) sum += std::exp(row[i] - mx);
    const double lse = mx + std::log(sum);
    for (const auto& [id, p] : dists[s].items()) {
      const double pv = p.get<double>();
      const int64_t k = std::stoll(id);
      if (pv <= 0 || k < 0 || k >= V) continue;
      d.rel = std::max(d.rel, std::fabs(std::log(pv) - (row[k] - lse)) / amax);
    }
    d.judged++;
  }
  return d;
}

void judge_logits(Context& cx, const std::string& comp, const json& dists, const EagerRun& eager,
                  const GgufBound& bound, const std::string& runtime, const std::string& what) {
  const LogitsDiff d = compare_logits(dists, eager.logits, eager.first_tie);
  const auto positions = static_cast<int64_t>(dists.size());
  const std::string msg = fmt::format(
      "{}: {} vs the eager model on the file's weights, max |log p diff| {:.3g} of max |logit| (bound "
      "{:.3g}) "
      "over {} of {} positions x {} tokens{}",
      what, runtime, d.rel, bound.logits_rel, d.judged, positions, eager.logits.shape().back(),
      d.judged == positions
          ? ""
          : fmt::format(" (a router near-tie at position {}: the rest not comparable)", eager.first_tie));
  const bool sized = dists.size() == static_cast<size_t>(eager.logits.size(0));
  const bool ok = sized && d.judged * 2 >= positions && d.rel <= bound.logits_rel;
  // Too few positions before a near-tie in every candidate sequence: not judged, never passed.
  const char* status = ok                                                               ? "passed"
                       : sized && d.judged * 2 < positions && d.rel <= bound.logits_rel ? "not_judged"
                                                                                        : "failed";
  cx.add(comp, "runtime numerics", status, ok ? msg : "expected " + msg,
         {{"max_rel_error", d.rel},
          {"bound", bound.logits_rel},
          {"positions", positions},
          {"judged", d.judged}});
}

// Greedy tokens teacher-forced: each llama.cpp token is the eager argmax there, or within twice the logits
// bound of it (a near-tie the rounding may flip), up to the first router near-tie along the sequence.
void judge_greedy(Context& cx, const std::string& file, const json& got, const CausalLM& m,
                  const std::vector<int64_t>& prompt, const GgufBound& bound, const std::string& runtime) {
  const int64_t n = std::max<int64_t>(cx.opt.tokens, 1);  // --tokens
  std::vector<int64_t> seq = prompt;
  for (const auto& t : got) seq.push_back(t.get<int64_t>());
  const EagerRun run = eager_logits(m, seq, bound.tie);
  const Tensor& logits = run.logits;
  const int64_t V = logits.shape().back();
  double amax = 0;
  for (float v : logits.to_floats()) amax = std::max(amax, std::fabs(static_cast<double>(v)));
  int64_t equal = 0, ties = 0;
  std::string bad;
  size_t judged = 0;
  for (size_t k = 0; k < got.size() && static_cast<int64_t>(prompt.size() + k) <= run.first_tie;
       k++, judged++) {
    const float* row = logits.data<float>() + static_cast<int64_t>(prompt.size() - 1 + k) * V;
    const int64_t best = std::max_element(row, row + V) - row, g = got[k].get<int64_t>();
    const double margin = row[best] - row[g];
    equal += best == g;
    ties += best != g && margin < 2 * bound.logits_rel * amax;
    if (best != g && margin >= 2 * bound.logits_rel * amax && bad.empty())
      bad = fmt::format("step {}: llama.cpp {}, eager {} with a margin of {:.3g} (near-tie < {:.3g})", k, g,
                        best, margin, 2 * bound.logits_rel * amax);
  }
  const bool ok = bad.empty() && static_cast<int64_t>(got.size()) == n && judged > 0;
  cx.add(
      file, "runtime greedy",
      ok                           ? "passed"
      : bad.empty() && judged == 0 ? "not_judged"
                                   : "failed",
      ok ? fmt::format("{} greedy tokens of {} are the eager model's ({} equal, {} at a near-tie){}", judged,
                       runtime, equal, ties,
                       judged == got.size() ? ""
                                            : fmt::format("; the {} after a router near-tie not comparable",
                                                          got.size() - judged))
         : fmt::format("expected {} greedy tokens of {} to be the eager model's, got {}", n, runtime,
                       bad.empty() ? fmt::format("{} tokens, {} before a router near-tie", got.size(), judged)
                                   : bad));
}

void judge_chat(Context& cx, const std::string& file, const json& got, const tok::ChatTemplate& t,
                const std::string& want) {
  const std::string rendered = got.value("text", json()).is_string() ? got["text"].get<std::string>() : "";
  const bool same_source = got.value("template", json()).is_string() && got["template"] == t.source();
  const bool ok = same_source && rendered == want;
  cx.add(file, "chat template", ok ? "passed" : "failed",
         ok ? fmt::format("the file's template rendered by @huggingface/jinja equals hfx's rendering of the "
                          "folder's ({} chars, 4 messages + generation prompt)",
                          want.size())
         : !same_source
             ? "expected the file's tokenizer.chat_template to be the folder's template, got " +
                   (got.value("template", json()).is_string() ? "another text" : std::string("none"))
             : fmt::format("expected @huggingface/jinja's rendering {} to equal hfx's {}",
                           json(rendered).dump(), json(want).dump()));
}

// What the file's types cost: the eager model on the file's weights against the checkpoint's (reported, not
// bounded: the file is held to the former).
void report_cost(Context& cx, const std::string& file, const Model& reference, const CausalLM& m,
                 GgmlType t) {
  const std::vector<int64_t> ids = test_tokens(reference.config().vocab_size, 1, 16, 7);
  const std::vector<float> a = eager_logits(as_causal_lm(reference), ids, 0).logits.to_floats(),
                           b = eager_logits(m, ids, 0).logits.to_floats();
  double amax = 0, err = 0;
  for (size_t i = 0; i < a.size(); i++) {
    amax = std::max(amax, std::fabs(static_cast<double>(a[i])));
    err = std::max(err, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  cx.add(file, "precision", "info",
         fmt::format(
             "the eager model on the file's {} weights vs the checkpoint's: max |logit diff| {:.3g} (max "
             "|logit| {:.3g}) over {} positions (reported, not bounded)",
             ggml_type_name(t), err, amax, ids.size()),
         {{"max_abs_logit_diff", err}, {"max_abs_logit", amax}});
}

}  // namespace

namespace {

// The file read back (the "read-back" check); nullopt when it could not be.
std::optional<GgufReadBack> read_back(Context& cx, const fs::path& path, const Model& reference) {
  const std::string file = path.filename().string();
  std::unique_ptr<GgufReader> r;
  GgufReadBack rb;
  try {
    cx.step("reading " + file + " back");
    r = std::make_unique<GgufReader>(path.string());
    rb = read_back_gguf(*r, reference);
  } catch (const Error& e) {
    cx.add(file, "read-back", "failed",
           fmt::format("expected {} to read back as the reference, got: {}", file, e.what()));
    return std::nullopt;
  }
  const std::string want = gguf_arch_of(reference.config().model_type),
                    arch = r->metadata().value("general.architecture", std::string("(none)"));
  if (rb.problems.empty() && arch == want)
    cx.add(
        file, "read-back", "passed",
        fmt::format("{} arch, {} tensors as the exporter plans them (matrices {}); every weight within its "
                    "type's rounding of the checkpoint's",
                    arch, r->tensors().size(), ggml_type_name(rb.matrix)),
        rb.weights);
  else
    cx.add(file, "read-back", "failed",
           rb.problems.empty()
               ? fmt::format("expected general.architecture {}, got {}", want, arch)
               : fmt::format("expected the file hfx writes for the reference, got {} differences: {}",
                             rb.problems.size(), rb.problems.front()),
           rb.weights);
  return rb;
}

}  // namespace

void check_gguf(Context& cx, const fs::path& path, const Model& reference) {
  const std::string file = path.filename().string();
  std::optional<GgufReadBack> rb = read_back(cx, path, reference);
  if (!rb) return;
  if (!cx.opt.shapes.empty())
    cx.add(file, "shapes", "info",
           fmt::format("--shapes {} not applied to {}: llama.cpp sizes its own context (no shape contract)",
                       cx.opt.shapes, file));
  if (rb->model->structure() == Structure::EncoderOnly)
    return check_gguf_embeddings(cx, path, reference, *rb);
  if (rb->model->structure() == Structure::EncoderDecoder) {  // llama.cpp's t5 arch
    for (const char* c : {"runtime numerics", "runtime greedy", "runtime tokenizer"})
      cx.add(
          file, c, "not_judged",
          "node-llama-cpp runs no encoder-decoder model (no llama_encode step in its contexts), so hfx "
          "verify "
          "has no runtime for this file; tests/interop/test_gguf_t5.py judges t5 files through llama.cpp's C "
          "API (node-llama-cpp's libllama)");
    return;
  }
  const CausalLM& m = as_causal_lm(*rb->model);
  const GgufBound bound = gguf_bound(rb->matrix, rb->ggml_gelu);
  report_cost(cx, file, reference, m, rb->matrix);
  std::string why, node;
  const std::string modules = llama_cpp_judge(node, why);
  if (modules.empty()) {
    for (const char* c : {"runtime numerics", "runtime greedy", "runtime tokenizer", "chat template"})
      cx.add(file, c, "not_judged", why);
    return;
  }
  cx.step("llama.cpp runs " + file);
  const EagerRun probe = probe_sequence(m, bound.tie);
  const std::vector<int64_t>& ids = probe.ids;
  const std::vector<int64_t> prompt = greedy_prompt(m, bound.tie, std::max<int64_t>(cx.opt.tokens, 1));
  json req = {{"probs", ids},
              {"decode", {{"ids", ids}, {"prefill", kPrefill}}},
              {"greedy", {{"ids", prompt}, {"n", std::max<int64_t>(cx.opt.tokens, 1)}}}};
  req["threads"] = std::max(cx.opt.threads, 1);  // --threads
  const std::vector<std::string> texts = corpus();
  std::unique_ptr<tok::Tokenizer> t;
  if (fs::exists(cx.out / "tokenizer.json")) {
    t = std::make_unique<tok::Tokenizer>(tok::Tokenizer::from_dir(cx.out.string()));
    req["tokenize"] = texts;
  }
  std::optional<tok::ChatTemplate> chat;
  try {
    chat = tok::ChatTemplate::from_dir(cx.out.string());
    req["chat"] = {{"variables", chat->variables(conversation())}};
  } catch (const Error&) {
    chat.reset();  // no template in the folder: nothing to compare (a "skipped" check below)
  }
  json got;
  try {
    got = run_judge(node, modules, path, req);
  } catch (const Error& e) {
    cx.add(file, "runtime numerics", "failed", e.what());
    return;
  }
  const std::string runtime =
      fmt::format("llama.cpp {} (node-llama-cpp {})", got["versions"].value("llama.cpp", "?"),
                  got["versions"].value("node-llama-cpp", "?"));
  judge_logits(cx, file + ":prefill", got["probs"], probe, bound, runtime,
               fmt::format("{} positions in one batch", ids.size()));
  judge_logits(cx, file + ":decode", got["decode"], probe, bound, runtime,
               fmt::format("{} in one batch, then {} one at a time on the cache", kPrefill, kDecode));
  judge_greedy(cx, file, got["greedy"], m, prompt, bound, runtime);
  if (t)
    judge_tokenizer(cx, file, got["tokenize"], texts, *t, runtime);
  else
    cx.add(file, "runtime tokenizer", "skipped",
           "no tokenizer.json in the folder: the file carries no vocabulary");
  if (chat)
    judge_chat(cx, file, got["chat"], *chat, chat->render(conversation()));
  else
    cx.add(file, "chat template", "skipped", "no chat template in the folder");
}

}  // namespace hfx::verify::detail
