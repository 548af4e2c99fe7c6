// `hfx generate` on encoder-decoder models through the CLI: from the checkpoint (eager engine) and from
// its ONNX export folder (ONNX Runtime over encoder_model + decoder_model_merged), the same greedy ids
// and text for a batch of prompts; sampling flags are refused with a [generate] error.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Proc {
  int rc = -1;
  std::string out;
};

Proc sh(const std::string& cmd) {
  Proc r;
  FILE* p = ::popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = ::pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

class Text2TextCli : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(Text2TextCli, CheckpointAndExportAgree) {
  const std::string arch = GetParam(), cli = HFX_CLI;
  fs::path dir = fs::temp_directory_path() / ("hfx_t2t_cli_" + arch + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ASSERT_EQ(sh(cli + " create-tiny " + arch + " -o " + (dir / "ckpt").string()).rc, 0);
  ASSERT_EQ(sh(cli + " export " + (dir / "ckpt").string() + " --format onnx -o " + (dir / "out").string()).rc,
            0);
  const std::string prompts =
      " --prompt 'translate: hello world' --prompt 'a b c' --max-new-tokens 16 --json";
  Proc eager = sh(cli + " generate " + (dir / "ckpt").string() + prompts);
  Proc ort = sh(cli + " generate " + (dir / "out").string() + prompts);
  ASSERT_EQ(eager.rc, 0) << eager.out;
  ASSERT_EQ(ort.rc, 0) << ort.out;
  json a = json::parse(eager.out), b = json::parse(ort.out);
  EXPECT_EQ(a["engine"], "eager");
  EXPECT_EQ(b["engine"], "ort");
  ASSERT_EQ(a["rows"].size(), 2u);
  for (size_t r = 0; r < 2; r++) {
    EXPECT_FALSE(a["rows"][r]["ids"].empty());
    EXPECT_EQ(a["rows"][r]["ids"], b["rows"][r]["ids"]) << "row " << r;
    EXPECT_EQ(a["rows"][r]["text"], b["rows"][r]["text"]) << "row " << r;
  }
  // The decoding options of decoder-only models apply (the Generator's loop on the decoder): a seeded
  // sampling run repeats itself, a stop string cuts the greedy text before it, --ignore-eos runs to the
  // budget; --quantize is refused naming the structure.
  const std::string sample = " generate " + (dir / "ckpt").string() +
                             " --prompt 'translate: hello world' --temperature 1.5 --top-k 50 --seed 3 "
                             "--repetition-penalty 1.2 --max-new-tokens 16 --json 2>/dev/null";
  Proc s1 = sh(cli + sample), s2 = sh(cli + sample);
  ASSERT_EQ(s1.rc, 0) << s1.out;
  EXPECT_EQ(json::parse(s1.out)["rows"][0]["ids"], json::parse(s2.out)["rows"][0]["ids"]);
  const std::string text = a["rows"][0]["text"];
  ASSERT_GE(text.size(), 4u) << text;
  {  // a stop string of the greedy text's bytes 2..3 (cut at its first occurrence)
    const std::string stop = text.substr(2, 2);
    Proc st =
        sh(cli + " generate " + (dir / "ckpt").string() +
           " --prompt 'translate: hello world' --max-new-tokens 16 --json --stop '" + stop + "' 2>/dev/null");
    ASSERT_EQ(st.rc, 0) << st.out;
    EXPECT_EQ(json::parse(st.out)["rows"][0]["finish_reason"], "stop");
    EXPECT_EQ(json::parse(st.out)["rows"][0]["text"], text.substr(0, text.find(stop)));
  }
  Proc ig = sh(cli + " generate " + (dir / "out").string() +
               " --prompt 'a b c' --max-new-tokens 16 --ignore-eos --json 2>/dev/null");
  ASSERT_EQ(ig.rc, 0) << ig.out;
  EXPECT_EQ(json::parse(ig.out)["rows"][0]["ids"].size(), 16u);
  // --quantize int8 at load (eager) runs the model whose exported int8 twin ONNX Runtime runs: same tokens.
  const std::string qp = " --prompt 'translate: hello world' --max-new-tokens 16 --json 2>/dev/null";
  ASSERT_EQ(sh(cli + " export " + (dir / "ckpt").string() + " --format onnx --quantize int8 -o " +
               (dir / "out-int8").string())
                .rc,
            0);
  Proc qe = sh(cli + " generate " + (dir / "ckpt").string() + " --quantize int8" + qp),
       qo = sh(cli + " generate " + (dir / "out-int8").string() + qp);
  ASSERT_EQ(qe.rc, 0) << qe.out;
  ASSERT_EQ(qo.rc, 0) << qo.out;
  EXPECT_EQ(json::parse(qe.out)["rows"][0]["ids"], json::parse(qo.out)["rows"][0]["ids"]);
  Proc q = sh("{ " + cli + " generate " + (dir / "out").string() + " --prompt x --quantize int8 2>&1; }");
  EXPECT_EQ(q.rc, 1);
  EXPECT_NE(q.out.find("got the ort engine on the encoder-decoder model " + arch), std::string::npos)
      << q.out;
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Archs, Text2TextCli, ::testing::Values("t5", "bart", "marian"),
                         [](const auto& i) { return i.param; });
