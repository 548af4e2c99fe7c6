// `hfx sweep --engine slurm` on a private single-node Slurm cluster started for each test from Debian's
// slurmctld, slurmd and munge (tests/integration/slurm_cluster.sh: no systemd, private ports, stopped by
// pid). Slurm missing is a failure, not a skip: scripts/setup.sh installs it.
// - the plan of sweep_test.cpp (architectures × {onnx, onnx --target ort, executorch, dynamo} and a
//   corrupted checkpoint) gives the same per-task status, stage, reason, worst error and sizes on Slurm as
//   locally; `--resume` after fixing the checkpoint submits only that task.
// - an array task cancelled with scancel mid-way is reported killed, its partial outputs discarded, and a
//   `--resume` on Slurm completes it.
// - a task over its memory limit (resources.mem_mb) is reported out_of_memory on Slurm as locally.
#include <cstdlib>

#include "integration/sweep_support.h"

using namespace sweep_test;

namespace {

// A running cluster; SLURM_CONF points at it for this process and the commands it starts.
class SlurmCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmpdir("slurm_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::string port = std::to_string(20000 + (::getpid() % 20000) * 2);
    // munged's socket path must fit in 108 bytes: the cluster gets a short folder of its own.
    cluster_ = fs::temp_directory_path() / ("hfx-slurm-" + std::to_string(::getpid()));
    fs::remove_all(cluster_);
    fs::create_directories(cluster_);
    Proc p = sh(script() + " start " + cluster_.string() + " " + port);
    ASSERT_EQ(p.rc, 0) << "single-node Slurm did not start: " << p.out;
    ::setenv("SLURM_CONF", (cluster_ / "slurm.conf").c_str(), 1);
    started_ = true;
  }
  void TearDown() override {
    if (started_) {
      Proc p = sh(script() + " stop " + cluster_.string());
      EXPECT_EQ(p.rc, 0) << p.out;
    }
    ::unsetenv("SLURM_CONF");
    if (!HasFailure()) {
      fs::remove_all(dir_);
      fs::remove_all(cluster_);
    }
  }
  static std::string script() { return std::string(HFX_SOURCE_DIR) + "/tests/integration/slurm_cluster.sh"; }
  fs::path dir_, cluster_;
  bool started_ = false;
};

}  // namespace

TEST_F(SlurmCluster, SamePlanSameSummaryAsLocalAndResume) {
  // bert: its eager reference sums in a different order with 1 thread than with 2, so its worst errors match
  // only because a task computes with resources.cpus threads on both engines (HFX_NUM_THREADS), pinned
  // locally and unpinned on this cluster.
  const std::vector<std::string> archs = {"llama", "qwen2", "bert"};
  make_checkpoints(dir_ / "ckpt", archs);
  fs::path plan = write_plan(dir_, archs, kFourVariants);
  Proc local = sh(sweep_cli() + " sweep " + plan.string() + " -o " + (dir_ / "local").string() + " --jobs 2");
  EXPECT_EQ(local.rc, 1) << local.out;
  Proc slurm =
      sh(sweep_cli() + " sweep " + plan.string() + " -o " + (dir_ / "slurm").string() + " --engine slurm");
  EXPECT_EQ(slurm.rc, 1) << slurm.out;
  EXPECT_NE(slurm.out.find("submitted Slurm job"), std::string::npos) << slurm.out;
  EXPECT_NE(slurm.out.find("(array 0-11, 12 tasks)"), std::string::npos) << slurm.out;
  json sl = read_json(dir_ / "slurm" / "summary.json"), lo = read_json(dir_ / "local" / "summary.json");
  EXPECT_EQ(sl["engine"], "slurm");
  EXPECT_EQ(comparable(sl), comparable(lo)) << comparable(sl).dump(1) << "\n" << comparable(lo).dump(1);
  EXPECT_EQ(task(sl, "broken.onnx")["status"], "failed");
  for (const auto& t : sl["tasks"])
    if (t["id"] != "broken.onnx") check_passed_task(dir_ / "slurm", t);
  // Each array task wrote its log where the batch script says.
  EXPECT_TRUE(fs::exists(dir_ / "slurm" / "slurm" / "task-11.log"));

  fs::copy_file(dir_ / "ckpt" / "llama" / "model.safetensors", dir_ / "ckpt" / "broken" / "model.safetensors",
                fs::copy_options::overwrite_existing);
  Proc again = sh(sweep_cli() + " sweep " + plan.string() + " -o " + (dir_ / "slurm").string() +
                  " --engine slurm --resume");
  EXPECT_EQ(again.rc, 0) << again.out;
  // broken.onnx is the plan's last task: index 11.
  EXPECT_NE(again.out.find("(array 11, 1 tasks)"), std::string::npos) << again.out;
  EXPECT_TRUE(read_json(dir_ / "slurm" / "summary.json")["passed"].get<bool>());
}

TEST_F(SlurmCluster, ScancelledTaskIsReportedKilledAndResumeCompletesIt) {
  ASSERT_EQ(sh(cli() + " create-tiny llama -o " + (dir_ / "ckpt" / "llama").string()).rc, 0);
  // The runner is stopped as soon as its temporary folder appears; export + verify take longer than that.
  std::ofstream(dir_ / "plan.json") << R"({"models": ["ckpt/llama"], "variants": [{"format": "onnx"}],
    "verify": {"tokens": 4, "warm_runs": 1, "threads": 1, "shapes": "1x4,2x1+4,1x3+2"}})";
  fs::path r = dir_ / "results";
  pid_t sweep =
      start_sweep((dir_ / "plan.json").string() + " -o " + r.string() + " --engine slurm", dir_ / "log1");
  ASSERT_GT(wait_for_runner(r, "llama.onnx"), 0) << slurp(dir_ / "log1");
  Proc q = sh("squeue -h -o %i");
  ASSERT_EQ(q.rc, 0) << q.out;
  std::string job = q.out.substr(0, q.out.find('\n'));
  ASSERT_NE(job.find('_'), std::string::npos) << "expected an array task id JOB_K, got " << q.out;
  Proc c = sh("scancel " + job);
  ASSERT_EQ(c.rc, 0) << c.out;
  EXPECT_EQ(wait_rc(sweep), 1) << slurp(dir_ / "log1");
  json t = task(read_json(r / "summary.json"), "llama.onnx");
  EXPECT_EQ(t["status"], "killed") << t.dump();
  EXPECT_NE(t["reason"].get<std::string>().find("ended CANCELLED"), std::string::npos) << t.dump();
  EXPECT_FALSE(fs::exists(r / "tasks" / "llama.onnx" / "export"));
  EXPECT_TRUE(leftovers(r).empty());

  Proc again = sh(sweep_cli() + " sweep " + (dir_ / "plan.json").string() + " -o " + r.string() +
                  " --engine slurm --resume");
  EXPECT_EQ(again.rc, 0) << again.out;
  json done = task(read_json(r / "summary.json"), "llama.onnx");
  EXPECT_EQ(done["status"], "passed");
  check_passed_task(r, done);
}

TEST_F(SlurmCluster, MemoryLimitBindsOnSlurmAsLocally) {
  ASSERT_EQ(sh(cli() + " create-tiny llama -o " + (dir_ / "ckpt" / "llama").string()).rc, 0);
  // The test cluster confines nothing (no cgroups): the task runner's own limit is what binds, here as
  // locally. 256 MiB: export stays below it, verify goes far above it (see sweep_plan_test.cpp).
  std::ofstream(dir_ / "plan.json") << R"({"models": ["ckpt/llama"], "variants": [{"format": "onnx"}],
    "verify": {"tokens": 4, "warm_runs": 1, "threads": 1, "shapes": "1x4"},
    "resources": {"cpus": 1, "mem_mb": 256, "time_min": 5}})";
  Proc slurm = sh(sweep_cli() + " sweep " + (dir_ / "plan.json").string() + " -o " +
                  (dir_ / "slurm").string() + " --engine slurm");
  EXPECT_EQ(slurm.rc, 1) << slurm.out;
  Proc local =
      sh(sweep_cli() + " sweep " + (dir_ / "plan.json").string() + " -o " + (dir_ / "local").string());
  EXPECT_EQ(local.rc, 1) << local.out;
  EXPECT_NE(slurp(dir_ / "slurm" / "slurm" / "sweep.sbatch").find("#SBATCH --mem=256M"), std::string::npos);
  json sl = read_json(dir_ / "slurm" / "summary.json"), lo = read_json(dir_ / "local" / "summary.json");
  EXPECT_EQ(task(sl, "llama.onnx")["status"], "out_of_memory") << sl.dump();
  EXPECT_EQ(comparable(sl), comparable(lo)) << comparable(sl).dump(1) << "\n" << comparable(lo).dump(1);
}
