// `hfx sweep` through the hfx binary, on tiny checkpoints:
// - local engine: a plan of architectures × {onnx, onnx --target ort, executorch, dynamo} plus one corrupted
//   checkpoint; only the corrupted task fails, with its reason in summary.json and the table; after fixing
//   the checkpoint `--resume` runs only that task; `sweep compare` names it as fixed one way and worse the
//   other.
// - a task runner killed with SIGKILL mid-way is reported killed, its partial outputs discarded, and a
//   `--resume` completes it.
// - summary.html renders in headless chromium with the matrix and no console message.
// The Slurm engine's tests are in sweep_slurm_test.cpp.
#include "integration/sweep_support.h"
#include "support/oracle.h"

using namespace sweep_test;

TEST(Sweep, UsageErrors) {
  fs::path d = tmpdir("usage");
  EXPECT_EQ(sh(cli() + " sweep").rc, 2);
  Proc h = sh(cli() + " sweep --help");
  EXPECT_EQ(h.rc, 0);
  EXPECT_NE(h.out.find("Example:"), std::string::npos) << h.out;
  std::ofstream(d / "plan.yaml") << "models: []\nvariants: [{format: onnx}]\n";
  Proc y = sh(sweep_cli() + " sweep " + (d / "plan.yaml").string() + " -o " + (d / "r").string());
  EXPECT_EQ(y.rc, 1);
  EXPECT_NE(y.out.find("expected 'models' to be a non-empty list"), std::string::npos) << y.out;
  ASSERT_EQ(sh(cli() + " create-tiny llama -o " + (d / "llama").string()).rc, 0);
  std::ofstream(d / "typo.json")
      << R"({"models": ["llama"], "variants": [{"format": "onnx", "taget": "ort"}]})";
  Proc t = sh(sweep_cli() + " sweep " + (d / "typo.json").string() + " -o " + (d / "r").string());
  EXPECT_EQ(t.rc, 1);
  EXPECT_NE(t.out.find("unknown key 'taget' in variants[0]"), std::string::npos) << t.out;
  EXPECT_FALSE(fs::exists(d / "r" / "summary.json"));
  fs::remove_all(d);
}

TEST(Sweep, LocalBrokenCheckpointFailsAloneResumeRunsOnlyIt) {
  fs::path d = tmpdir("local");
  const std::vector<std::string> archs = {"llama", "qwen2"};
  make_checkpoints(d / "ckpt", archs);
  fs::path plan = write_plan(d, archs, kFourVariants);
  fs::path r = d / "results";
  Proc first = sh(sweep_cli() + " sweep " + plan.string() + " -o " + r.string() + " --jobs 2");
  EXPECT_EQ(first.rc, 1) << first.out;
  json s = read_json(r / "summary.json");
  ASSERT_EQ(s["tasks"].size(), 9u);
  for (const auto& t : s["tasks"]) {
    if (t["id"] == "broken.onnx") continue;
    EXPECT_EQ(t["status"], "passed") << t.dump();
    check_passed_task(r, t);
  }
  const json& b = task(s, "broken.onnx");
  EXPECT_EQ(b["status"], "failed");
  EXPECT_EQ(b["stage"], "export");
  EXPECT_NE(b["reason"].get<std::string>().find("safetensors"), std::string::npos) << b.dump();
  EXPECT_NE(first.out.find("broken.onnx FAILED: export exited 1"), std::string::npos) << first.out;
  EXPECT_TRUE(leftovers(r).empty());
  json before = s;
  fs::copy(r, d / "results-broken", fs::copy_options::recursive);

  // Fix the checkpoint; --resume runs the one failed task and keeps the other results as they were.
  fs::copy_file(d / "ckpt" / "llama" / "model.safetensors", d / "ckpt" / "broken" / "model.safetensors",
                fs::copy_options::overwrite_existing);
  Proc again = sh(sweep_cli() + " sweep " + plan.string() + " -o " + r.string() + " --resume");
  EXPECT_EQ(again.rc, 0) << again.out;
  EXPECT_NE(again.out.find("running 1 on local (resume)"), std::string::npos) << again.out;
  json after = read_json(r / "summary.json");
  EXPECT_TRUE(after["passed"].get<bool>());
  for (const auto& t : after["tasks"]) {
    if (t["id"] == "broken.onnx")
      EXPECT_NE(t["run_id"], task(before, "broken.onnx")["run_id"]);
    else
      EXPECT_EQ(t["run_id"], task(before, t["id"])["run_id"]) << t["id"];
  }
  check_passed_task(r, task(after, "broken.onnx"));

  Proc fixed = sh(cli() + " sweep compare " + (d / "results-broken").string() + " " + r.string());
  EXPECT_EQ(fixed.rc, 0) << fixed.out;
  EXPECT_NE(fixed.out.find("0 worse, 1 fixed"), std::string::npos) << fixed.out;
  Proc worse = sh(cli() + " sweep compare " + r.string() + " " + (d / "results-broken").string());
  EXPECT_EQ(worse.rc, 1) << worse.out;
  EXPECT_NE(worse.out.find("WORSE broken.onnx"), std::string::npos) << worse.out;
  EXPECT_NE(worse.out.find("status passed -> failed"), std::string::npos) << worse.out;
  fs::remove_all(d);
}

TEST(Sweep, KilledTaskIsReportedAndResumeCompletesIt) {
  fs::path d = tmpdir("killed");
  ASSERT_EQ(sh(cli() + " create-tiny llama -o " + (d / "ckpt" / "llama").string()).rc, 0);
  // The runner is stopped as soon as its temporary folder appears; export + verify take longer than that.
  std::ofstream(d / "plan.json") << R"({"models": ["ckpt/llama"], "variants": [{"format": "onnx"}],
    "verify": {"tokens": 4, "warm_runs": 1, "threads": 1, "shapes": "1x4,2x1+4,1x3+2"}})";
  fs::path r = d / "results";
  pid_t sweep = start_sweep((d / "plan.json").string() + " -o " + r.string(), d / "log1");
  pid_t runner = wait_for_runner(r, "llama.onnx");
  ASSERT_GT(runner, 0) << slurp(d / "log1");
  ASSERT_EQ(::kill(runner, SIGKILL), 0);
  EXPECT_EQ(wait_rc(sweep), 1) << slurp(d / "log1");
  json t = task(read_json(r / "summary.json"), "llama.onnx");
  EXPECT_EQ(t["status"], "killed") << t.dump();
  EXPECT_EQ(t["signal"], SIGKILL);
  EXPECT_NE(t["reason"].get<std::string>().find("signal 9"), std::string::npos) << t.dump();
  EXPECT_FALSE(fs::exists(r / "tasks" / "llama.onnx" / "export"));
  EXPECT_TRUE(leftovers(r).empty());
  EXPECT_NE(slurp(d / "log1").find("llama.onnx KILLED"), std::string::npos) << slurp(d / "log1");

  Proc again = sh(sweep_cli() + " sweep " + (d / "plan.json").string() + " -o " + r.string() + " --resume");
  EXPECT_EQ(again.rc, 0) << again.out;
  json done = task(read_json(r / "summary.json"), "llama.onnx");
  EXPECT_EQ(done["status"], "passed");
  check_passed_task(r, done);
  fs::remove_all(d);
}

TEST(Sweep, SummaryHtmlRendersInChromium) {
  fs::path d = tmpdir("html");
  make_checkpoints(d / "ckpt", {"llama"});
  fs::path plan = write_plan(d, {"llama"}, json::parse(R"([{"format": "onnx"}, {"format": "dynamo"}])"));
  fs::path r = d / "results";
  EXPECT_EQ(sh(sweep_cli() + " sweep " + plan.string() + " -o " + r.string() + " --jobs 2").rc, 1);
  ASSERT_TRUE(fs::exists("/usr/bin/chromium")) << "chromium is installed by scripts/setup.sh";
  std::string flags = " --headless --no-sandbox --disable-gpu --user-data-dir=" + (d / "chrome").string() +
                      " --enable-logging=stderr --v=0 ";
  Proc c = sh("/usr/bin/chromium" + flags + "--dump-dom file://" + (r / "summary.html").string() + " 2>" +
              (d / "console.log").string());
  ASSERT_EQ(c.rc, 0) << c.out;
  // The DOM as chromium parsed it: the matrix with one cell per task, the broken one failed with its reason.
  EXPECT_NE(c.out.find("<table id=\"matrix\">"), std::string::npos) << c.out;
  EXPECT_NE(
      c.out.find("<td class=\"passed\" id=\"llama.onnx\"><a href=\"tasks/llama.onnx/export/verify.html\">"),
      std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("<td class=\"failed\" id=\"broken.onnx\">"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("<td class=\"na\" id=\"\">N/A</td>"), std::string::npos) << c.out;
  std::string console = slurp(d / "console.log");
  EXPECT_EQ(console.find("CONSOLE"), std::string::npos) << console;
  fs::remove_all(d);
}

// A gguf variant: each model's file exported and judged by llama.cpp (`hfx verify` reads it back and runs
// it); the plan's ONNX-only verify options (shapes, warm runs, threads) do not reach it, a gguf variant of
// its own that sets one is refused before anything runs.
TEST(Sweep, GgufVariantIsJudgedByLlamaCpp) {
  HFX_REQUIRE_ORACLE(hfx::test::kNodeLlamaCpp);
  fs::path d = tmpdir("gguf");
  make_checkpoints(d / "ckpt", {"llama"});
  const fs::path plan = d / "plan.json";
  std::ofstream(plan)
      << R"({"models": ["ckpt/llama"], "variants": [{"format": "gguf", "quantize": ["none", "q8_0"]}],
                             "verify": {"tokens": 8, "shapes": "1x4", "warm_runs": 1, "threads": 1}})";
  fs::path r = d / "results";
  Proc p = sh(sweep_cli() + " sweep " + plan.string() + " -o " + r.string());
  EXPECT_EQ(p.rc, 0) << p.out;
  json s = read_json(r / "summary.json");
  for (const char* id : {"llama.gguf", "llama.gguf-q8_0"}) {
    const json& t = task(s, id);
    EXPECT_EQ(t["status"], "passed") << t.dump();
    const json v = read_json(r / "tasks" / id / "export" / "verify.json");
    bool judged = false;
    for (const auto& c : v["checks"])
      judged |= c["component"] == "model.gguf:decode" && c["check"] == "runtime numerics" &&
                c["status"] == "passed";
    EXPECT_TRUE(judged) << v.dump();
    EXPECT_NE(t["commands"][0].get<std::string>().find("--format gguf"), std::string::npos) << t.dump();
    EXPECT_EQ(t["commands"][1].get<std::string>().find("--shapes"), std::string::npos) << t.dump();
  }
  std::ofstream(d / "bad.json")
      << R"({"models": ["ckpt/llama"], "variants": [{"format": "gguf", "verify": {"shapes": "1x4"}}]})";
  Proc bad = sh(sweep_cli() + " sweep " + (d / "bad.json").string() + " -o " + (d / "r2").string());
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.out.find("unknown key 'shapes' in variants[0].verify"), std::string::npos) << bad.out;
  EXPECT_FALSE(fs::exists(d / "r2" / "summary.json"));
  fs::remove_all(d);
}
