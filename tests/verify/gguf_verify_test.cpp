// GGUF read back and `hfx verify` of a GGUF export:
//   * GgufReader decodes what the writer wrote (f32 bit-exact, the block types within their rounding) and
//     refuses every truncation of a file, a wrong magic or version, and a tensor past the end;
//   * read_back_gguf gives the checkpoint's weights back from an f32 file exactly (llama.cpp's q/k row order
//     undone), and names the tensor when the file holds other weights;
//   * a BertForMaskedLM's file reads back as BertModel (the file has no MLM head) with llama.cpp's GELU;
//   * `hfx verify` on a GGUF folder: llama.cpp (node-llama-cpp) runs it and every check passes (a BERT's
//     file: its embedding context's [CLS] vectors); negative
//     controls: another checkpoint's file fails the read-back, a rope base edited in the file's metadata
//     fails llama.cpp's numerics (the weights are still right), and with the judge off the folder is not
//     judged.
// tests/interop/test_gguf.py runs `hfx verify` over every family and type.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "hfx/core/error.h"
#include "hfx/export/gguf.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/tiny.h"
#include "hfx/verify/verify.h"
#include "support/oracle.h"
#include "support/shell.h"

namespace hfx {
namespace {
namespace fs = std::filesystem;

struct Dir {
  fs::path path = fs::temp_directory_path() / ("hfx_gguf_verify_" + std::to_string(::getpid()));
  Dir() { fs::remove_all(path); }
  ~Dir() { fs::remove_all(path); }
};

// A tiny checkpoint exported to GGUF through the CLI with `args` (`head` and `pooling`: TinyOptions').
fs::path exported(const fs::path& root, const std::string& model_type, const std::string& args,
                  uint64_t seed = 0, const std::string& head = "", const std::string& pooling = "") {
  const fs::path ckpt = root / (model_type + "-" + std::to_string(seed));
  if (!fs::exists(ckpt)) {
    TinyOptions o;
    o.seed = seed;
    o.head = head;
    o.sentence_pooling = pooling;
    create_tiny(model_type, ckpt.string(), o);
  }
  const fs::path out = root / (model_type + "-" + std::to_string(seed) + "-gguf" +
                               std::to_string(std::hash<std::string>()(args)));
  const auto p = testsupport::sh(std::string(HFX_CLI) + " export " + ckpt.string() + " --format gguf " +
                                 args + " -o " + out.string());
  EXPECT_EQ(p.rc, 0) << p.out;
  return out;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& p, const std::string& b) { std::ofstream(p, std::ios::binary) << b; }

TEST(GgufReader, DecodesWhatTheWriterWrote) {
  Dir d;
  const fs::path f32 = exported(d.path, "llama", "--dtype f32");
  const auto model = load_model((d.path / "llama-0").string());
  GgufReader r((f32 / "model.gguf").string());
  EXPECT_EQ(r.metadata().at("general.architecture"), "llama");
  EXPECT_EQ(r.metadata().at("llama.block_count"), model->config().num_hidden_layers);
  ASSERT_NE(r.find("token_embd.weight"), nullptr);
  const Tensor emb = r.decode(*r.find("token_embd.weight"));
  EXPECT_EQ(emb.shape(), model->weights().info("model.embed_tokens.weight").shape);
  EXPECT_EQ(emb.to_floats(), model->weights().get("model.embed_tokens.weight").to_floats());
  // The block types: within half a step of each block's scale d = amax / 127, plus the f16 rounding of d
  // itself (up to d * 2^-11 on each of up to 127 steps).
  const fs::path q8 = exported(d.path, "llama", "--quantize q8_0");
  GgufReader rq((q8 / "model.gguf").string());
  const GgufTensor* up = rq.find("blk.0.ffn_up.weight");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->type, GgmlType::Q8_0);
  const std::vector<float> got = rq.decode(*up).to_floats(),
                           want = model->weights().get("model.layers.0.mlp.up_proj.weight").to_floats();
  ASSERT_EQ(got.size(), want.size());
  for (size_t b = 0; b < want.size(); b += 32) {
    float amax = 0;
    for (size_t j = b; j < b + 32; j++) amax = std::max(amax, std::fabs(want[j]));
    for (size_t j = b; j < b + 32; j++)
      ASSERT_LE(std::fabs(got[j] - want[j]), amax / 127 * (0.5f + 127.0f / 2048)) << j;
  }
}

TEST(GgufReader, RefusesTruncatedAndCraftedFiles) {
  Dir d;
  const fs::path out = exported(d.path, "llama", "--dtype f32");
  const std::string bytes = read_bytes(out / "model.gguf");
  const fs::path bad = d.path / "bad.gguf";
  // Every cut inside the header and tensor table, and a few in the data: an error, never a crash.
  GgufReader whole((out / "model.gguf").string());
  const uint64_t data = whole.tensors().front().offset;
  for (uint64_t n = 0; n < bytes.size(); n += n < data + 64 ? 1 : 4099) {
    write_bytes(bad, bytes.substr(0, n));
    EXPECT_THROW(GgufReader r(bad.string()), Error) << "cut at " << n;
  }
  std::string magic = bytes;
  magic[0] = 'X';
  write_bytes(bad, magic);
  try {
    GgufReader r(bad.string());
    ADD_FAILURE() << "a wrong magic was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[gguf] expected the magic 'GGUF'"), std::string::npos) << e.what();
  }
  std::string version = bytes;
  version[4] = 2;
  write_bytes(bad, version);
  EXPECT_THROW(GgufReader r(bad.string()), Error);
}

TEST(GgufReadBack, F32FileGivesTheCheckpointBackExactly) {
  Dir d;
  const fs::path out = exported(d.path, "llama", "--dtype f32");
  const auto ref = load_model((d.path / "llama-0").string());
  GgufReader r((out / "model.gguf").string());
  const GgufReadBack rb = read_back_gguf(r, *ref);
  EXPECT_TRUE(rb.problems.empty()) << rb.problems.front();
  EXPECT_EQ(rb.matrix, GgmlType::F32);
  // q_proj went through llama.cpp's rope row order and back
  for (const char* w : {"model.layers.0.self_attn.q_proj.weight", "model.layers.1.self_attn.k_proj.weight",
                        "model.norm.weight"})
    EXPECT_EQ(rb.model->weights().get(w).to_floats(), ref->weights().get(w).to_floats()) << w;
  // Negative control: another checkpoint's file (same shapes, other seed) is named weight by weight.
  const fs::path other = exported(d.path, "llama", "--dtype f32", 5);
  GgufReader ro((other / "model.gguf").string());
  const GgufReadBack wrong = read_back_gguf(ro, *ref);
  ASSERT_FALSE(wrong.problems.empty());
  EXPECT_NE(wrong.problems.front().find("of the reference's max |w|"), std::string::npos)
      << wrong.problems.front();
}

// Every model_type the backend maps, from create-tiny's defaults: the f32 file reads back as the checkpoint's
// weights (within f32's 1e-6: Gemma's w + 1 - 1, Mamba's log(exp)), or the export is refused, before writing,
// with the reason of a config the arch cannot express (create-tiny's few such defaults: a sliding window,
// biases, a NoPE step, q/k LayerNorms, sliding layers with a rope base of their own; xlm-roberta's,
// camembert's tokenizer without a sentencepiece charsmap, t5's and mt5's relative max distance of 20;
// tests/interop/test_gguf.py and test_gguf_bert.py export them with the released models' settings and
// tokenizers).
TEST(GgufReadBack, EveryMappedModelTypeReadsBackOrIsRefusedWithItsReason) {
  Dir d;
  int read = 0, refused = 0;
  for (const std::string& mt : gguf_model_types()) {
    SCOPED_TRACE(mt);
    const fs::path ckpt = d.path / mt;
    TinyOptions o;
    create_tiny(mt, ckpt.string(), o);
    const fs::path out = d.path / (mt + "-gguf");
    const auto p = testsupport::sh(std::string(HFX_CLI) + " export " + ckpt.string() + " --format gguf -o " +
                                   out.string());
    if (p.rc != 0) {
      EXPECT_NE(p.out.find("[gguf] expected "), std::string::npos) << p.out;
      if (mt == "xlm-roberta" || mt == "camembert") {
        EXPECT_NE(p.out.find("sentencepiece charsmap"), std::string::npos) << p.out;
      } else if (mt == "t5" || mt == "mt5") {  // create-tiny's max distance 20 (llama.cpp's is 128)
        EXPECT_NE(p.out.find("relative_attention_max_distance"), std::string::npos) << p.out;
      }
      EXPECT_FALSE(fs::exists(out / "model.gguf"));
      refused++;
      continue;
    }
    const auto ref = load_model(ckpt.string());
    GgufReader r((out / "model.gguf").string());
    const GgufReadBack rb = read_back_gguf(r, *ref);
    EXPECT_TRUE(rb.problems.empty()) << rb.problems.front();
    EXPECT_EQ(r.metadata().at("general.architecture"), gguf_arch_of(mt));
    read++;
  }
  EXPECT_GE(read, 30) << "model types read back";
  EXPECT_LE(refused, 17) << "model types refused with create-tiny's defaults";
}

TEST(GgufReadBack, BertForMaskedLMComesBackAsBertModel) {
  Dir d;
  const fs::path out = exported(d.path, "bert", "--dtype f32", 0, "masked_lm");
  const auto ref = load_model((d.path / "bert-0").string());
  ASSERT_EQ(ref->head(), "masked_lm");
  GgufReader r((out / "model.gguf").string());
  EXPECT_EQ(r.metadata().at("general.architecture"), "bert");
  EXPECT_FALSE(r.metadata().contains("bert.pooling_type"));  // no sentence-transformers modules: none
  const GgufReadBack rb = read_back_gguf(r, *ref);
  EXPECT_TRUE(rb.problems.empty()) << rb.problems.front();
  EXPECT_EQ(rb.model->head(), "base");                              // the file has no MLM head
  EXPECT_EQ(rb.model->config().raw.at("hidden_act"), "gelu_ggml");  // llama.cpp's bert graph's GELU
  for (const char* w :
       {"encoder.layer.0.attention.self.query.weight", "embeddings.position_embeddings.weight"})
    EXPECT_EQ(rb.model->weights().get(w).to_floats(),
              ref->weights().get(std::string("bert.") + w).to_floats())
        << w;
}

verify::VerifyReport verify_folder(const fs::path& out, const fs::path& reference) {
  verify::VerifyOptions o;
  o.out_dir = out.string();
  o.reference = reference.string();
  o.quiet = true;
  return verify::run_verify(o);
}

const verify::CheckResult* find_check(const verify::VerifyReport& r, const std::string& comp,
                                      const std::string& check) {
  for (const auto& c : r.checks)
    if (c.component == comp && c.check == check) return &c;
  return nullptr;
}

TEST(GgufVerify, LlamaCppJudgesTheFile) {
  HFX_REQUIRE_ORACLE(test::kNodeLlamaCpp);
  HFX_REQUIRE_ORACLE(test::kHfJinja);
  Dir d;
  for (const char* args : {"--dtype f32", "--quantize q4_0"}) {
    SCOPED_TRACE(args);
    const fs::path out = exported(d.path, "llama", args);
    const verify::VerifyReport r = verify_folder(out, d.path / "llama-0");
    EXPECT_EQ(r.verdict, "verified") << r.first_failure << r.not_judged;
    for (const char* c : {"model.gguf:prefill", "model.gguf:decode"})
      ASSERT_NE(find_check(r, c, "runtime numerics"), nullptr) << c;
    for (const char* c : {"runtime greedy", "runtime tokenizer", "chat template", "read-back"}) {
      const auto* k = find_check(r, "model.gguf", c);
      ASSERT_NE(k, nullptr) << c;
      EXPECT_EQ(k->status, "passed") << c << ": " << k->message;
    }
  }
}

TEST(GgufVerify, LlamaCppEmbedsWithABertFile) {
  HFX_REQUIRE_ORACLE(test::kNodeLlamaCpp);
  Dir d;
  for (const char* args : {"--dtype f32", "--quantize q8_0"}) {
    SCOPED_TRACE(args);
    const fs::path out = exported(d.path, "bert", args, 0, "", "cls");
    const verify::VerifyReport r = verify_folder(out, d.path / "bert-0");
    EXPECT_EQ(r.verdict, "verified") << r.first_failure << r.not_judged;
    const auto* n = find_check(r, "model.gguf:embeddings", "runtime numerics");
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->status, "passed") << n->message;
    EXPECT_NE(n->message.find("[CLS] vectors"), std::string::npos) << n->message;
    for (const char* c : {"read-back", "runtime tokenizer"})
      EXPECT_EQ(find_check(r, "model.gguf", c)->status, "passed") << c;
    // No generation in an embedding model: said so, not passed.
    EXPECT_EQ(find_check(r, "model.gguf", "runtime greedy")->status, "skipped");
  }
}

TEST(GgufVerify, NegativeControls) {
  HFX_REQUIRE_ORACLE(test::kNodeLlamaCpp);
  HFX_REQUIRE_ORACLE(test::kHfJinja);
  Dir d;
  const fs::path out = exported(d.path, "llama", "--dtype f32"), ref = d.path / "llama-0";
  // Another checkpoint's file in the folder: llama.cpp agrees with eager on its weights, the read-back does
  // not.
  const fs::path other = exported(d.path, "llama", "--dtype f32", 5);
  const fs::path swapped = d.path / "swapped";
  fs::copy(out, swapped);
  fs::copy_file(other / "model.gguf", swapped / "model.gguf", fs::copy_options::overwrite_existing);
  fs::remove(swapped / "manifest.json");
  verify::VerifyReport r = verify_folder(swapped, ref);
  EXPECT_EQ(r.verdict, "failed");
  EXPECT_EQ(find_check(r, "model.gguf", "read-back")->status, "failed");
  // The rope base edited in the metadata: the weights read back right, llama.cpp computes another model.
  std::string bytes = read_bytes(out / "model.gguf");
  const std::string key = "llama.rope.freq_base";
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  const float base = 50.0f;
  std::memcpy(bytes.data() + at + key.size() + 4, &base, 4);  // after the key: u32 type, then the f32
  const fs::path edited = d.path / "edited";
  fs::copy(out, edited);
  write_bytes(edited / "model.gguf", bytes);
  fs::remove(edited / "manifest.json");
  r = verify_folder(edited, ref);
  EXPECT_EQ(r.verdict, "failed");
  EXPECT_EQ(find_check(r, "model.gguf", "read-back")->status, "passed");
  EXPECT_EQ(find_check(r, "model.gguf:prefill", "runtime numerics")->status, "failed");
  // The judge off: nothing ran the file, so nothing is verified.
  ::setenv("HFX_LLAMA_CPP_JUDGE", "0", 1);
  r = verify_folder(out, ref);
  ::unsetenv("HFX_LLAMA_CPP_JUDGE");
  EXPECT_EQ(r.verdict, "not_judged") << r.first_failure;
  EXPECT_NE(r.not_judged.find("HFX_LLAMA_CPP_JUDGE=0"), std::string::npos) << r.not_judged;
}

}  // namespace
}  // namespace hfx
