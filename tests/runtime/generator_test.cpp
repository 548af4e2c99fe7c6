// Generation: the loop's rules on a scripted engine (left padding, HF positions, EOS, stop strings,
// streaming), then the eager engine on tiny models of every architecture (cached greedy = full
// recomputation, batch = alone, seeded sampling), then ONNX Runtime = eager over an ONNX export.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <filesystem>
#include <map>
#include <numeric>

#include <nlohmann/json.hpp>

#include "hfx/artifact/manifest.h"
#include "hfx/core/error.h"
#include "hfx/export/exporter.h"
#include "hfx/export/registry.h"
#include "hfx/models/model.h"
#include "hfx/models/tiny.h"
#include "hfx/ops/functional.h"
#include "hfx/runtime/generator.h"
#include "hfx/tokenizers/tokenizer.h"

namespace fs = std::filesystem;
using hfx::GenerationOptions;
using hfx::Generator;

namespace {

// A stand-in model: keeps each row's real tokens (mask = 1) and checks every position id against HF's
// rule; the next token is `next(history)` with a margin of 10 over the rest, plus a small per-token ramp
// so that sampling has a spread.
class ScriptEngine : public hfx::Engine {
 public:
  ScriptEngine(int64_t vocab, std::function<int64_t(const std::vector<int64_t>&)> next)
      : V_(vocab), next_(std::move(next)) {}
  std::string name() const override { return "script"; }
  int64_t vocab_size() const override { return V_; }
  void reset() override {
    rows_.clear();
    past_ = 0;
    steps = 0;
  }
  int64_t past_length() const override { return past_; }
  void step(std::span<const int64_t> ids, std::span<const int64_t> mask, std::span<const int64_t> pos,
            int64_t B, int64_t S, std::vector<float>& logits) override {
    const int64_t T = past_ + S;
    EXPECT_EQ(static_cast<int64_t>(mask.size()), B * T);
    if (rows_.empty()) rows_.resize(B);
    ASSERT_EQ(static_cast<int64_t>(rows_.size()), B);
    logits.assign(B * V_, 0.0f);
    for (int64_t b = 0; b < B; b++) {
      int64_t real = 0;
      for (int64_t j = 0; j < T; j++) real += mask[b * T + j] && j < past_ ? 1 : 0;
      for (int64_t j = 0; j < S; j++) {
        if (mask[b * T + past_ + j]) {
          rows_[b].push_back(ids[b * S + j]);
          real++;
          EXPECT_EQ(pos[b * S + j], real - 1) << "row " << b << " step " << steps;
        } else {
          EXPECT_EQ(pos[b * S + j], std::max<int64_t>(real - 1, 0));
        }
      }
      float* l = logits.data() + b * V_;
      for (int64_t v = 0; v < V_; v++) l[v] = 0.001f * static_cast<float>(v % 7);
      l[next_(rows_[b])] = 10.0f;
    }
    past_ = T;
    steps++;
  }
  int steps = 0;

 private:
  int64_t V_;
  std::function<int64_t(const std::vector<int64_t>&)> next_;
  std::vector<std::vector<int64_t>> rows_;
  int64_t past_ = 0;
};

std::shared_ptr<const hfx::tok::Tokenizer> tiny_tokenizer() {
  static auto t = std::make_shared<const hfx::tok::Tokenizer>(hfx::tok::Tokenizer::from_json_string(
      hfx::tok::make_tiny_tokenizer_json(hfx::tok::TinyTokenizerKind::ByteLevelBPE, 320)));
  return t;
}

int64_t hash_next(const std::vector<int64_t>& h, int64_t V) {
  uint64_t x = 1469598103934665603ull;
  for (int64_t t : h) x = (x ^ static_cast<uint64_t>(t)) * 1099511628211ull;
  return static_cast<int64_t>(x % static_cast<uint64_t>(V - 10)) + 5;
}

}  // namespace

TEST(Generator, PositionsFromMaskFollowHF) {
  std::vector<int64_t> mask = {0, 0, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(hfx::positions_from_mask(mask, 2, 4, 4), (std::vector<int64_t>{0, 0, 0, 1, 0, 1, 2, 3}));
  EXPECT_EQ(hfx::positions_from_mask(mask, 2, 4, 1), (std::vector<int64_t>{1, 3}));
}

TEST(Generator, EosIdsFromJson) {
  EXPECT_EQ(hfx::eos_ids_from_json_text(R"({"eos_token_id": 2})"), (std::vector<int64_t>{2}));
  EXPECT_EQ(hfx::eos_ids_from_json_text(R"({"eos_token_id": [128001, 128009]})"),
            (std::vector<int64_t>{128001, 128009}));
  EXPECT_TRUE(hfx::eos_ids_from_json_text(R"({"eos_token_id": null})").empty());
  EXPECT_THROW(hfx::eos_ids_from_json_text(R"({"eos_token_id": "x"})"), hfx::Error);
}

TEST(Generator, LeftPaddedBatchEqualsEachPromptAlone) {
  const int64_t V = 64;
  auto next = [&](const std::vector<int64_t>& h) { return hash_next(h, V); };
  std::vector<std::vector<int64_t>> prompts = {{3, 4, 5}, {7, 8, 9, 10, 11, 12, 13}, {20, 21, 22, 23, 24}};
  GenerationOptions o;
  o.max_new_tokens = 12;
  Generator batch(std::make_unique<ScriptEngine>(V, next), nullptr, {});
  auto rb = batch.generate_ids(prompts, o);
  for (size_t r = 0; r < prompts.size(); r++) {
    Generator alone(std::make_unique<ScriptEngine>(V, next), nullptr, {});
    auto ra = alone.generate_ids({prompts[r]}, o);
    EXPECT_EQ(rb.ids[r], ra.ids[0]) << "row " << r;
    EXPECT_EQ(rb.finish_reasons[r], "length");
  }
  EXPECT_EQ(rb.stats.decode_steps, 11);
}

TEST(Generator, EosStopsARowAndIsKeptInIds) {
  const int64_t V = 64, eos = 2;
  // row history length 3 + 4 generated → eos
  auto next = [](const std::vector<int64_t>& h) {
    return h.size() >= 6 ? eos : 10 + static_cast<int64_t>(h.size());
  };
  Generator g(std::make_unique<ScriptEngine>(V, next), nullptr, {eos});
  GenerationOptions o;
  o.max_new_tokens = 20;
  auto r = g.generate_ids({{1, 1, 1}, {1}}, o);
  EXPECT_EQ(r.ids[0], (std::vector<int64_t>{13, 14, 15, eos}));
  EXPECT_EQ(r.finish_reasons[0], "eos");
  EXPECT_EQ(r.ids[1].back(), eos);
  EXPECT_EQ(r.ids[1].size(), 6u);
  o.ignore_eos = true;
  o.max_new_tokens = 6;
  r = g.generate_ids({{1, 1, 1}}, o);
  EXPECT_EQ(r.ids[0].size(), 6u);
  EXPECT_EQ(r.finish_reasons[0], "length");
}

TEST(Generator, StopStringCutsTheTextAndIsNeverStreamed) {
  auto tk = tiny_tokenizer();
  const std::string script_text = "Hello world, this is a test. STOP here and more";
  auto enc = tk->encode(script_text, false);
  std::vector<int64_t> script(enc.begin(), enc.end());
  const size_t prompt_len = 2;
  auto next = [script](const std::vector<int64_t>& h) {
    size_t i = h.size() - prompt_len;
    return i < script.size() ? script[i] : script.back();
  };
  Generator g(std::make_unique<ScriptEngine>(tk->vocab_size(), next), tk, {});
  GenerationOptions o;
  o.max_new_tokens = 64;
  o.stop = {"STOP"};
  std::string streamed;
  bool finished_seen = false;
  auto r = g.generate_ids({{5, 6}}, o, [&](const hfx::TokenEvent& e) {
    EXPECT_FALSE(finished_seen);
    streamed += e.text;
    finished_seen = e.finished;
  });
  EXPECT_EQ(r.finish_reasons[0], "stop");
  EXPECT_EQ(r.texts[0], "Hello world, this is a test. ");
  EXPECT_EQ(streamed, r.texts[0]);
  EXPECT_TRUE(finished_seen);
  EXPECT_LT(r.ids[0].size(), script.size());

  // Without the stop string the whole script streams, piece by piece, and equals the decoded text.
  o.stop.clear();
  o.max_new_tokens = static_cast<int64_t>(script.size());
  streamed.clear();
  int events = 0;
  r = g.generate_ids({{5, 6}}, o, [&](const hfx::TokenEvent& e) {
    streamed += e.text;
    events++;
  });
  EXPECT_EQ(r.texts[0], script_text);
  EXPECT_EQ(streamed, script_text);
  EXPECT_EQ(events, static_cast<int>(script.size()));
}

TEST(Generator, SeededSamplingIsReproducible) {
  const int64_t V = 64;
  // a flat engine: every token equally likely
  class Flat : public ScriptEngine {
   public:
    Flat() : ScriptEngine(64, [](const std::vector<int64_t>&) { return 0; }) {}
    void step(std::span<const int64_t> ids, std::span<const int64_t> mask, std::span<const int64_t> pos,
              int64_t B, int64_t S, std::vector<float>& logits) override {
      ScriptEngine::step(ids, mask, pos, B, S, logits);
      std::fill(logits.begin(), logits.end(), 0.0f);
    }
  };
  GenerationOptions o;
  o.max_new_tokens = 24;
  o.sampling = {.greedy = false, .temperature = 1.0f, .top_k = 20, .seed = 99};
  auto run = [&](uint64_t seed, std::vector<std::vector<int64_t>> prompts) {
    o.sampling.seed = seed;
    Generator g(std::make_unique<Flat>(), nullptr, {});
    return g.generate_ids(prompts, o).ids;
  };
  auto a = run(99, {{1, 2}, {3}});
  EXPECT_EQ(a, run(99, {{1, 2}, {3}}));
  EXPECT_NE(a, run(100, {{1, 2}, {3}}));
  EXPECT_EQ(a[0], run(99, {{1, 2}})[0]);  // row r draws from seed + r: row 0 is the same alone
  (void)V;
}

TEST(Generator, RejectsBadInputs) {
  Generator g(std::make_unique<ScriptEngine>(16, [](const std::vector<int64_t>&) { return 1; }), nullptr, {});
  GenerationOptions o;
  EXPECT_THROW(g.generate_ids({{}}, o), hfx::Error);
  EXPECT_THROW(g.generate_ids({{99}}, o), hfx::Error);
  EXPECT_THROW(g.generate({"text"}, o), hfx::Error);  // no tokenizer
  o.stop = {"x"};
  EXPECT_THROW(g.generate_ids({{1}}, o), hfx::Error);
  EXPECT_THROW(Generator::open("/nonexistent/folder"), hfx::Error);
}

// ---- eager engine on tiny models ----

namespace {

struct Tiny {
  std::string dir;
  std::shared_ptr<const hfx::CausalLM> model;
};

// Tiny checkpoints and exports live under TempDir for the whole run and are removed at the end.
std::vector<std::string>& temp_dirs() {
  static std::vector<std::string> d;
  return d;
}
struct RemoveTempDirs : testing::Environment {
  void TearDown() override {
    std::error_code ec;
    for (const auto& d : temp_dirs())
      for (const char* suffix : {"", "_onnx", "_onnx_split", "_onnx_cli", "_onnx_cli_releases"})
        fs::remove_all(d + suffix, ec);
  }
};
[[maybe_unused]] testing::Environment* const kRemoveTempDirs =
    testing::AddGlobalTestEnvironment(new RemoveTempDirs);

const Tiny& tiny(const std::string& arch) {
  static std::map<std::string, Tiny> cache;
  auto it = cache.find(arch);
  if (it != cache.end()) return it->second;
  Tiny t;
  t.dir = (fs::path(testing::TempDir()) / ("hfx_gen_" + arch + "_" + std::to_string(::getpid()))).string();
  hfx::TinyOptions opt;
  opt.dtype = hfx::DType::F32;
  hfx::create_tiny(arch, t.dir, opt);
  temp_dirs().push_back(t.dir);
  t.model = hfx::load_causal_lm(t.dir);
  return cache.emplace(arch, t).first->second;
}

// Greedy by full recomputation: no cache, the whole sequence every step, argmax of the last logits.
std::vector<int64_t> greedy_full(const hfx::CausalLM& m, std::vector<int64_t> ids, int n) {
  std::vector<int64_t> out;
  for (int i = 0; i < n; i++) {
    hfx::EagerBuilder b;
    hfx::ForwardArgs a;
    a.input_ids = b.wrap(hfx::Tensor::from_ints({1, static_cast<int64_t>(ids.size())}, ids));
    auto logits = m.forward(b, a).logits.tensor();
    auto last = logits.select(1, logits.size(1) - 1).select(0, 0).contiguous().to_floats();
    int64_t best = std::max_element(last.begin(), last.end()) - last.begin();
    out.push_back(best);
    ids.push_back(best);
  }
  return out;
}

std::vector<std::string> arch_names() {
  std::vector<std::string> r;
  for (const auto* a : hfx::all_architectures())
    if (a->heads.empty() || a->heads.front().first == "causal_lm") r.push_back(a->model_type);
  return r;
}

}  // namespace

class EagerGeneration : public testing::TestWithParam<std::string> {};

TEST_P(EagerGeneration, CachedGreedyEqualsFullRecomputation) {
  const Tiny& t = tiny(GetParam());
  Generator g(std::make_unique<hfx::EagerEngine>(t.model), nullptr, {});
  GenerationOptions o;
  o.max_new_tokens = 32;
  o.ignore_eos = true;
  std::vector<int64_t> prompt = {1, 17, 42, 99, 7};
  auto r = g.generate_ids({prompt}, o);
  EXPECT_EQ(r.ids[0], greedy_full(*t.model, prompt, 32));
}

TEST_P(EagerGeneration, LeftPaddedBatchOfThreeEqualsEachAlone) {
  const Tiny& t = tiny(GetParam());
  GenerationOptions o;
  o.max_new_tokens = 32;
  o.ignore_eos = true;
  std::vector<std::vector<int64_t>> prompts = {{5, 9, 13}, {1, 2, 3, 4, 5, 6, 7, 8}, {40, 41, 42, 43, 44}};
  Generator g(std::make_unique<hfx::EagerEngine>(t.model), nullptr, {});
  auto rb = g.generate_ids(prompts, o);
  for (size_t r = 0; r < prompts.size(); r++) {
    auto ra = g.generate_ids({prompts[r]}, o);
    EXPECT_EQ(rb.ids[r], ra.ids[0]) << GetParam() << " row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, EagerGeneration, testing::ValuesIn(arch_names()),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

TEST(EagerGenerator, OpenCheckpointSamplesReproduciblyAndStops) {
  const Tiny& t = tiny("llama");
  Generator g = Generator::open(t.dir, {.engine = "eager"});
  EXPECT_EQ(g.engine().name(), "eager");
  EXPECT_FALSE(g.eos_token_ids().empty());
  GenerationOptions o;
  o.max_new_tokens = 16;
  o.sampling = {.greedy = false,
                .temperature = 0.9f,
                .top_k = 40,
                .top_p = 0.95f,
                .repetition_penalty = 1.1f,
                .seed = 5};
  auto a = g.generate({"Hello world", "The quick brown fox"}, o);
  auto b = g.generate({"Hello world", "The quick brown fox"}, o);
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.texts, b.texts);
  // EOS: the first greedy token, declared as EOS, ends the row at once.
  GenerationOptions greedy;
  greedy.max_new_tokens = 8;
  greedy.ignore_eos = true;
  auto r = g.generate({"Hello world"}, greedy);
  greedy.ignore_eos = false;
  greedy.eos_token_ids = {r.ids[0][0]};
  auto e = g.generate({"Hello world"}, greedy);
  EXPECT_EQ(e.ids[0], (std::vector<int64_t>{r.ids[0][0]}));
  EXPECT_EQ(e.finish_reasons[0], "eos");
  // Stop string: a piece of the greedy text stops there.
  greedy.eos_token_ids.clear();
  greedy.ignore_eos = true;
  const std::string full = r.texts[0];
  if (full.size() >= 4) {
    greedy.stop = {full.substr(full.size() / 2, 2)};
    auto s = g.generate({"Hello world"}, greedy);
    EXPECT_EQ(s.finish_reasons[0], "stop");
    EXPECT_EQ(s.texts[0], full.substr(0, full.find(greedy.stop[0])));
  }
}

// ---- ONNX Runtime over an ONNX export ----
#ifdef HFX_HAVE_ORT
namespace {
// Exports the tiny model of `arch` for generation into DIR_onnx with its side files (as hfx export does).
std::string export_onnx(const std::string& arch) {
  const Tiny& t = tiny(arch);
  const std::string out = t.dir + "_onnx";
  if (fs::exists(fs::path(out) / "onnx/model.onnx")) return out;
  fs::remove_all(out);
  fs::create_directories(out);
  auto ex = hfx::make_exporter("onnx");
  auto cfg = hfx::make_config("onnx");
  hfx::CaptureOptions opts;
  ex->export_for_generation(*t.model, opts, {{"*", cfg.get()}}, out);
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(fs::path(t.dir) / f, fs::path(out) / f, fs::copy_options::overwrite_existing);
  return out;
}

// Every architecture of these tests must export to ONNX: a declared export skip (hfx/export/registry.h)
// for one of them is a failure here, not a skip, since the tests claim ORT generation for all of them.
bool onnx_exportable(const std::string& arch, std::string* why) {
  try {
    hfx::make_exporter("onnx");
    hfx::check_export_skip("onnx", arch);
  } catch (const hfx::Error& e) {
    *why = e.what();
    return false;
  }
  return true;
}
}  // namespace

class OrtGeneration : public testing::TestWithParam<std::string> {};

TEST_P(OrtGeneration, GreedyEqualsEagerBatch1And3) {
  std::string why;
  ASSERT_TRUE(onnx_exportable(GetParam(), &why)) << why;
  const Tiny& t = tiny(GetParam());
  const std::string out = export_onnx(GetParam());
  GenerationOptions o;
  o.max_new_tokens = 32;
  o.ignore_eos = true;
  Generator eager(std::make_unique<hfx::EagerEngine>(t.model), nullptr, {});
  Generator ort = Generator::open(out, {.engine = "ort"});
  EXPECT_EQ(ort.engine().name(), "ort");
  std::vector<std::vector<int64_t>> prompts = {{5, 9, 13}, {1, 2, 3, 4, 5, 6, 7, 8}, {40, 41, 42, 43, 44}};
  EXPECT_EQ(ort.generate_ids({prompts[1]}, o).ids, eager.generate_ids({prompts[1]}, o).ids);
  auto e3 = eager.generate_ids(prompts, o);
  EXPECT_EQ(ort.generate_ids(prompts, o).ids, e3.ids);
}

INSTANTIATE_TEST_SUITE_P(Archs, OrtGeneration, testing::ValuesIn(arch_names()),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

TEST(OrtGenerator, SplitGraphsStreamingAndEagerFromTheExportFolder) {
  std::string why;
  ASSERT_TRUE(onnx_exportable("llama", &why)) << why;
  const Tiny& t = tiny("llama");
  const std::string out = export_onnx("llama");
  GenerationOptions o;
  o.max_new_tokens = 16;
  o.ignore_eos = true;
  std::vector<std::vector<int64_t>> prompts = {{5, 9, 13}, {1, 2, 3, 4, 5, 6, 7, 8}};
  Generator eager(std::make_unique<hfx::EagerEngine>(t.model), nullptr, {});
  auto ref = eager.generate_ids(prompts, o);

  // prefill.onnx + decode.onnx give the same tokens as the merged graph
  ASSERT_TRUE(fs::exists(fs::path(out) / "onnx/prefill.onnx") &&
              fs::exists(fs::path(out) / "onnx/decode.onnx"));
  const std::string split = out + "_split";
  fs::remove_all(split);
  fs::copy(out, split, fs::copy_options::recursive);
  fs::remove(fs::path(split) / "onnx/model.onnx");
  EXPECT_EQ(Generator::open(split, {.engine = "ort"}).generate_ids(prompts, o).ids, ref.ids);

  // text prompts through the folder's tokenizer; the stream adds up to the text; EOS from generation_config
  Generator ort = Generator::open(out);
  EXPECT_EQ(ort.engine().name(), "ort");
  EXPECT_FALSE(ort.eos_token_ids().empty());
  std::string streamed;
  auto r = ort.generate({"Hello world"}, o, [&](const hfx::TokenEvent& ev) { streamed += ev.text; });
  EXPECT_EQ(streamed, r.texts[0]);

  // --engine eager on the export folder: weights through the manifest's source path
  EXPECT_THROW(Generator::open(out, {.engine = "eager"}), hfx::Error);  // no weights, no manifest
  hfx::artifact::build_manifest(out, t.dir, "onnx", {}, {}).write(out);
  Generator ref2 = Generator::open(out, {.engine = "eager"});
  EXPECT_EQ(ref2.engine().name(), "eager");
  EXPECT_EQ(ref2.generate_ids(prompts, o).ids, ref.ids);
  fs::remove(fs::path(out) / "manifest.json");
}

// The CLI: generate --json over the export equals the checkpoint's eager run; release refuses an
// unverified export with a non-zero exit.
TEST(OrtGenerator, Cli) {
  std::string why;
  ASSERT_TRUE(onnx_exportable("llama", &why)) << why;
  const Tiny& t = tiny("llama");
  const std::string out = export_onnx("llama");
  auto run = [](const std::string& cmd, std::string* output) {
    FILE* p = popen((cmd + " 2>/dev/null").c_str(), "r");
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) output->append(buf, n);
    return WEXITSTATUS(pclose(p));
  };
  const std::string args =
      " --prompt 'Hello world' --prompt 'A longer prompt than that' --max-new-tokens 12 --ignore-eos --json";
  std::string a, b;
  ASSERT_EQ(run(std::string(HFX_CLI) + " generate " + out + args, &a), 0);
  ASSERT_EQ(run(std::string(HFX_CLI) + " generate " + t.dir + args, &b), 0);
  auto ja = nlohmann::json::parse(a), jb = nlohmann::json::parse(b);
  EXPECT_EQ(ja["engine"], "ort");
  EXPECT_EQ(jb["engine"], "eager");
  EXPECT_EQ(ja["rows"][0]["ids"], jb["rows"][0]["ids"]);
  EXPECT_EQ(ja["rows"][1]["ids"], jb["rows"][1]["ids"]);

  const std::string copy = out + "_cli";
  fs::remove_all(copy);
  fs::copy(out, copy, fs::copy_options::recursive);
  std::string o;
  ASSERT_EQ(run(std::string(HFX_CLI) + " manifest " + copy + " --source " + t.dir, &o), 0) << o;
  EXPECT_EQ(run(std::string(HFX_CLI) + " manifest " + copy + " --check", &o), 0);
  EXPECT_NE(run(std::string(HFX_CLI) + " release " + copy + " --into " + copy + "_releases", &o), 0);
  EXPECT_FALSE(fs::exists(fs::path(copy + "_releases") / "current"));
  hfx::artifact::record_verify_result(copy, true, {{"summary", "test"}});
  EXPECT_EQ(run(std::string(HFX_CLI) + " release " + copy + " --into " + copy + "_releases", &o), 0);
  EXPECT_TRUE(fs::is_symlink(fs::path(copy + "_releases") / "current"));
}
#endif
