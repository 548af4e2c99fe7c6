// The CLI's conventions and `hfx inspect`, through the hfx binary:
// - exit status 0 success, 1 failure, 2 usage error (unknown command, unknown option, missing argument);
//   `hfx no-such-command` names the command and lists the commands; every command's --help has an example.
// - `hfx inspect` on a tiny decoder (llama), encoder (bert masked_lm) and encoder-decoder (t5): text and
//   --json, the values checked against config.json and the safetensors header read here independently.
// - `hfx export` prints a summary and keeps its warnings in manifest.json; `hfx verify OUT` without
//   --reference uses the manifest's source, and shows the export warnings.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>
#include "hfx/export/registry.h"
#include "support/shell.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using hfx::testsupport::Proc;
using hfx::testsupport::sh;

std::string cli() { return HFX_CLI; }

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

fs::path tmpdir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("hfx_cli_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// The safetensors header of model.safetensors, parsed here without hfx: parameters and bytes per dtype.
struct Sizes {
  int64_t parameters = 0, tensors = 0;
  std::map<std::string, int64_t> bytes, params;
};
Sizes read_sizes(const fs::path& file) {
  std::string s = slurp(file);
  uint64_t n = 0;
  std::memcpy(&n, s.data(), 8);
  json h = json::parse(s.substr(8, n));
  static const std::map<std::string, std::string> names = {
      {"F32", "float32"}, {"BF16", "bfloat16"}, {"F16", "float16"}};
  Sizes z;
  for (const auto& [k, v] : h.items()) {
    if (k == "__metadata__") continue;
    int64_t numel = 1;
    for (const auto& d : v["shape"]) numel *= d.get<int64_t>();
    std::string dt = names.at(v["dtype"].get<std::string>());
    z.parameters += numel;
    z.tensors++;
    z.params[dt] += numel;
    z.bytes[dt] += v["data_offsets"][1].get<int64_t>() - v["data_offsets"][0].get<int64_t>();
  }
  return z;
}

const json& backend(const json& j, const std::string& name) {
  for (const auto& b : j["backends"])
    if (b["backend"] == name) return b;
  static json none;
  ADD_FAILURE() << "no backend row " << name;
  return none;
}

bool has(const json& list, const std::string& s) {
  for (const auto& x : list)
    if (x.get<std::string>() == s) return true;
  return false;
}

// Runs inspect (text and JSON) on a fresh tiny checkpoint and checks the common fields.
json inspect_checked(const fs::path& dir, const std::string& arch, const std::string& head_flag) {
  Proc c = sh(cli() + " create-tiny " + arch + " " + head_flag + " -o " + (dir / "ckpt").string());
  EXPECT_EQ(c.rc, 0) << c.out;
  Proc t = sh(cli() + " inspect " + (dir / "ckpt").string());
  EXPECT_EQ(t.rc, 0) << t.out;
  Proc r = sh(cli() + " inspect " + (dir / "ckpt").string() + " --json 2>/dev/null");
  EXPECT_EQ(r.rc, 0) << r.out;
  json j = json::parse(r.out);
  json cfg = json::parse(slurp(dir / "ckpt" / "config.json"));
  EXPECT_EQ(j["model_type"], cfg["model_type"]);
  EXPECT_EQ(j["class"], cfg["architectures"][0]);
  EXPECT_EQ(j["vocab_size"], cfg["vocab_size"]);
  Sizes z = read_sizes(dir / "ckpt" / "model.safetensors");
  EXPECT_EQ(j["parameters"].get<int64_t>(), z.parameters);
  EXPECT_EQ(j["tensors"].get<int64_t>(), z.tensors);
  EXPECT_EQ(j["by_dtype"].size(), z.bytes.size());
  for (const auto& [dt, b] : z.bytes) {
    EXPECT_EQ(j["by_dtype"][dt]["bytes"].get<int64_t>(), b) << dt;
    EXPECT_EQ(j["by_dtype"][dt]["parameters"].get<int64_t>(), z.params[dt]) << dt;
  }
  EXPECT_EQ(j["weight_files_bytes"].get<int64_t>(),
            static_cast<int64_t>(fs::file_size(dir / "ckpt" / "model.safetensors")));
  // The text form carries the same facts.
  for (const std::string& s :
       {j["model_type"].get<std::string>(), j["class"].get<std::string>(), j["structure"].get<std::string>(),
        std::to_string(z.parameters), std::string("backends")})
    EXPECT_NE(t.out.find(s), std::string::npos) << s << "\n" << t.out;
  EXPECT_EQ(j["backends"].size(), 6u);
  // Every backend exports it, except --target ort for an encoder-only model, which export refuses (no
  // fused operator applies), and GGUF for what llama.cpp does not run (bert is its bert arch, t5 its t5
  // arch): inspect says so, with the reason, instead of promising it.
  for (const auto& b : j["backends"]) {
    const bool gguf_refused = b["format"] == "gguf" && j["structure"] != "decoder-only" &&
                              j["model_type"] != "bert" && j["model_type"] != "t5";
    if (gguf_refused) {
      EXPECT_FALSE(b["supported"].get<bool>()) << b.dump();
      EXPECT_NE(b.value("reason", "").find("[gguf] expected a decoder-only model"), std::string::npos)
          << b.dump();
      continue;
    }
    if (b["format"] == "gguf" && (j["model_type"] == "bert" || j["model_type"] == "t5")) {
      EXPECT_TRUE(b["supported"].get<bool>()) << b.dump();
      EXPECT_NE(b["artifacts"][0].get<std::string>().find(j["model_type"].get<std::string>() + " arch"),
                std::string::npos)
          << b.dump();
      continue;
    }
    const bool refused = j["structure"] == "encoder-only" && b["backend"] == "onnx ort";
    EXPECT_EQ(b["supported"].get<bool>(), !refused) << b.dump();
    if (refused) {
      EXPECT_NE(b.value("reason", "").find("--target standard"), std::string::npos) << b.dump();
    }
  }
  return j;
}

}  // namespace

TEST(CliInspect, DecoderLlama) {
  fs::path d = tmpdir("llama");
  json j = inspect_checked(d, "llama", "");
  json cfg = json::parse(slurp(d / "ckpt" / "config.json"));
  EXPECT_EQ(j["structure"], "decoder-only");
  EXPECT_EQ(j["head"], "causal_lm");
  EXPECT_EQ(j["max_position_embeddings"], cfg["max_position_embeddings"]);
  EXPECT_EQ(j["num_hidden_layers"], cfg["num_hidden_layers"]);
  ASSERT_EQ(j["components"].size(), 1u);
  const json& m = j["components"][0];
  EXPECT_EQ(m["name"], "model");
  EXPECT_EQ(m["inputs"][0]["name"], "input_ids");
  EXPECT_EQ(m["outputs"][0], "logits");
  int64_t layers = cfg["num_hidden_layers"].get<int64_t>();
  EXPECT_EQ(static_cast<int64_t>(m["cache"].size()), 2 * layers);  // key and value per layer
  EXPECT_EQ(j["cache_layer_types"]["full_attention"].get<int64_t>(), 2 * layers);
  const json& onnx = backend(j, "onnx standard");
  for (const char* p : {"onnx/prefill.onnx", "onnx/decode.onnx", "onnx/model.onnx"})
    EXPECT_TRUE(has(onnx["artifacts"], p)) << p;
  const json& dyn = backend(j, "dynamo");
  EXPECT_TRUE(has(dyn["artifacts"], "prefill.pt2"));
  EXPECT_TRUE(has(dyn["artifacts"], "decode.pt2"));
  EXPECT_FALSE(has(dyn["artifacts"], "model.pt2"));  // merged: not a torch.export program
  EXPECT_NE(backend(j, "executorch portable")["artifacts"][0].get<std::string>().find("forward"),
            std::string::npos);
  // The XNNPACK program: the same forward method, its partitions delegated.
  EXPECT_NE(backend(j, "executorch xnnpack")["artifacts"][0].get<std::string>().find("forward"),
            std::string::npos);
  fs::remove_all(d);
}

TEST(CliInspect, EncoderBertMaskedLm) {
  fs::path d = tmpdir("bert");
  json j = inspect_checked(d, "bert", "--head masked_lm");
  EXPECT_EQ(j["structure"], "encoder-only");
  EXPECT_EQ(j["head"], "masked_lm");
  EXPECT_EQ(j["class"], "BertForMaskedLM");
  ASSERT_EQ(j["components"].size(), 1u);
  const json& m = j["components"][0];
  EXPECT_EQ(m["outputs"], json::array({"logits"}));
  EXPECT_TRUE(m["cache"].empty());
  std::vector<std::string> ins;
  for (const auto& i : m["inputs"]) ins.push_back(i["name"]);
  EXPECT_EQ(ins, (std::vector<std::string>{"input_ids", "attention_mask", "token_type_ids"}));
  EXPECT_EQ(backend(j, "onnx standard")["artifacts"], json::array({"onnx/model.onnx"}));
  EXPECT_EQ(backend(j, "dynamo")["artifacts"], json::array({"model.pt2"}));
  EXPECT_EQ(backend(j, "executorch portable")["artifacts"], json::array({"model.pte: forward"}));
  fs::remove_all(d);
}

TEST(CliInspect, EncoderDecoderT5) {
  fs::path d = tmpdir("t5");
  json j = inspect_checked(d, "t5", "");
  json cfg = json::parse(slurp(d / "ckpt" / "config.json"));
  EXPECT_EQ(j["structure"], "encoder-decoder");
  EXPECT_EQ(j["head"], "seq2seq_lm");
  ASSERT_EQ(j["components"].size(), 2u);
  EXPECT_EQ(j["components"][0]["name"], "encoder");
  EXPECT_EQ(j["components"][1]["name"], "decoder");
  int64_t dec_layers = cfg.value("num_decoder_layers", cfg["num_layers"].get<int64_t>());
  EXPECT_EQ(static_cast<int64_t>(j["components"][1]["cache"].size()),
            4 * dec_layers);  // self and cross, key and value
  EXPECT_TRUE(j["components"][0]["cache"].empty());
  const json& onnx = backend(j, "onnx standard");
  for (const char* p : {"onnx/encoder_model.onnx", "onnx/decoder_model.onnx",
                        "onnx/decoder_with_past_model.onnx", "onnx/decoder_model_merged.onnx"})
    EXPECT_TRUE(has(onnx["artifacts"], p)) << p;
  EXPECT_EQ(backend(j, "dynamo")["artifacts"],
            json::array({"encoder_model.pt2", "decoder_model.pt2", "decoder_with_past_model.pt2"}));
  EXPECT_EQ(backend(j, "executorch portable")["artifacts"],
            json::array({"model.pte: encoder, decoder, decoder_with_past"}));
  fs::remove_all(d);
}

TEST(CliInspect, NotACheckpointOrUnknownModelType) {
  fs::path d = tmpdir("bad");
  // A folder that does not exist is a usage error, as for every command that takes MODEL (resolve_model).
  Proc m = sh(cli() + " inspect " + (d / "missing").string());
  EXPECT_EQ(m.rc, 2) << m.out;
  EXPECT_NE(m.out.find("[hub] expected an existing folder or a model id ORG/NAME[@REVISION], got"),
            std::string::npos)
      << m.out;
  fs::create_directories(d / "empty");
  Proc a = sh(cli() + " inspect " + (d / "empty").string());
  EXPECT_EQ(a.rc, 1) << a.out;
  EXPECT_NE(a.out.find("[inspect] expected a checkpoint folder with config.json, got"), std::string::npos)
      << a.out;
  fs::create_directories(d / "odd");
  std::ofstream(d / "odd" / "config.json") << R"({"model_type": "no_such_arch"})";
  Proc b = sh(cli() + " inspect " + (d / "odd").string());
  EXPECT_EQ(b.rc, 1) << b.out;
  EXPECT_NE(b.out.find("[inspect] expected a model_type among ["), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("got 'no_such_arch'"), std::string::npos) << b.out;
  fs::remove_all(d);
}

TEST(CliConventions, UnknownCommandIsUsageError) {
  Proc p = sh(cli() + " no-such-command");
  EXPECT_EQ(p.rc, 2) << p.out;
  EXPECT_NE(p.out.find("unknown command 'no-such-command'"), std::string::npos) << p.out;
  for (const char* c : {"export", "generate", "verify", "inspect", "create-tiny"})
    EXPECT_NE(p.out.find(c), std::string::npos) << c;
  Proc none = sh(cli());
  EXPECT_EQ(none.rc, 2) << none.out;
  p = sh(cli() + " --quiet no-such-command");  // after the one global flag, too
  EXPECT_EQ(p.rc, 2) << p.out;
  EXPECT_NE(p.out.find("unknown command 'no-such-command'"), std::string::npos) << p.out;
}

TEST(CliConventions, UsageErrorsExitTwo) {
  fs::path d = tmpdir("usage");
  // Missing required argument, unknown option, a folder that does not exist (a CLI11 check), a bad value.
  for (const std::string& args :
       {std::string("export"), std::string("export ") + d.string() + " --bogus -o x",
        std::string("export ") + (d / "missing").string() + " -o x", std::string("inspect"),
        std::string("generate ") + d.string() + " --prompt a --max-new-tokens notanumber",
        std::string("--no-such-flag"),
        // misuses a command finds itself
        std::string("create-tiny llama -o ") + (d / "t").string() + " --pooling mean",
        std::string("embed ") + d.string()}) {
    Proc p = sh(cli() + " " + args);
    EXPECT_EQ(p.rc, 2) << args << "\n" << p.out;
  }
  fs::remove_all(d);
}

TEST(CliConventions, EveryCommandHelpShowsAnExample) {
  for (const char* c : {"ops", "registries", "export", "generate", "release", "manifest", "rollback",
                        "verify", "create-tiny", "embed", "inspect", "sweep"}) {
    Proc p = sh(cli() + " " + c + " --help");
    EXPECT_EQ(p.rc, 0) << c << "\n" << p.out;
    EXPECT_NE(p.out.find("Example:\n  hfx "), std::string::npos) << c << "\n" << p.out;
  }
  Proc v = sh(cli() + " --version");
  EXPECT_EQ(v.rc, 0) << v.out;
}

TEST(CliConventions, ExportSummaryAndWarningsKeptInManifestShownByVerify) {
  fs::path d = tmpdir("warn");
  fs::path ckpt = d / "ckpt", out = d / "out";
  ASSERT_EQ(sh(cli() + " create-tiny llama -o " + ckpt.string()).rc, 0);
  // A config.json whose bos_token_id is an empty list makes the ExecuTorch export warn (get_bos_id returns
  // -1): the warning goes into the manifest.
  json cfg = json::parse(slurp(ckpt / "config.json"));
  cfg["bos_token_id"] = json::array();
  std::ofstream(ckpt / "config.json") << cfg.dump(2);
  Proc e = sh(cli() + " export " + ckpt.string() + " --format executorch -o " + out.string());
  ASSERT_EQ(e.rc, 0) << e.out;
  for (const char* s : {"programs (captured nodes): forward (", "model.pte", "total",
                        "warnings: 1 (kept in manifest.json)", " s\n"})
    EXPECT_NE(e.out.find(s), std::string::npos) << s << "\n" << e.out;
  json m = json::parse(slurp(out / "manifest.json"));
  ASSERT_TRUE(m.contains("warnings")) << m.dump();
  ASSERT_EQ(m["warnings"].size(), 1u);
  std::string w0 = m["warnings"][0];
  EXPECT_NE(w0.find("bos_token_id"), std::string::npos) << w0;
  // verify shows it, and the export passes.
  Proc v = sh(cli() + " verify " + out.string() + " --no-manifest");
  EXPECT_EQ(v.rc, 0) << v.out;
  EXPECT_NE(v.out.find("export warning"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find(w0), std::string::npos) << v.out;
  fs::remove_all(d);
}

TEST(CliConventions, VerifyWithoutReferenceUsesManifestSource) {
  fs::path d = tmpdir("verify");
  fs::path ckpt = d / "ckpt", out = d / "out";
  ASSERT_EQ(sh(cli() + " create-tiny llama -o " + ckpt.string()).rc, 0);
  // ExecuTorch: verified by hfx's own .pte executor, so this runs in builds without ONNX Runtime too.
  Proc e = sh(cli() + " export " + ckpt.string() + " --format executorch -o " + out.string());
  ASSERT_EQ(e.rc, 0) << e.out;
  EXPECT_NE(e.out.find("warnings: none"), std::string::npos) << e.out;
  ASSERT_FALSE(fs::exists(out / "model.safetensors"));  // the export folder holds no weights
  Proc v = sh(cli() + " verify " + out.string() + " --no-manifest");
  EXPECT_EQ(v.rc, 0) << v.out;
  EXPECT_NE(v.out.find("from " + fs::weakly_canonical(ckpt).string()), std::string::npos) << v.out;
  // The source gone: the clear error stays, naming the manifest's source; exit 1 (a failure, not usage).
  fs::rename(ckpt, d / "moved");
  Proc g = sh(cli() + " verify " + out.string() + " --no-manifest");
  EXPECT_EQ(g.rc, 1) << g.out;
  EXPECT_NE(g.out.find("the manifest names the source " + fs::weakly_canonical(ckpt).string() +
                       ", which is not a readable checkpoint folder"),
            std::string::npos)
      << g.out;
  fs::remove_all(d);
}

// `hfx registries --stages` lists the declared stages (the declaration check_registries holds entries to),
// with the kinds of entries each applies; --backend filters them.
TEST(CliRegistries, StagesListsTheDeclaredStages) {
  Proc p = sh(cli() + " registries --stages");
  ASSERT_EQ(p.rc, 0) << p.out;
  for (const hfx::StageDecl& d : hfx::declared_stages()) {
    EXPECT_NE(p.out.find(d.name), std::string::npos) << d.name << "\n" << p.out;
    EXPECT_NE(p.out.find(d.backend), std::string::npos) << p.out;
  }
  EXPECT_NE(p.out.find("program_fix"), std::string::npos) << p.out;
  Proc e = sh(cli() + " registries --stages --backend executorch");
  ASSERT_EQ(e.rc, 0) << e.out;
  EXPECT_EQ(e.out.find("dynamo"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("backend preparation"), std::string::npos) << e.out;
}
