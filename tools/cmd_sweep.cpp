// `hfx sweep PLAN.json|PLAN.yaml -o RESULTS [--engine local|slurm] [--jobs N] [--resume]`: exports and
// verifies every model × variant of a plan (tools/sweep/), on this machine or as one Slurm job array, and
// writes RESULTS/summary.json, RESULTS/summary.html and the table. `--dry-run` prints the expanded tasks.
// `hfx sweep PLAN --task K -o RESULTS` runs one task (what each local process and each Slurm array task
// runs); `hfx sweep compare OLD NEW` lists what got worse between two results folders.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "commands.h"
#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "sweep/sweep.h"

namespace fs = std::filesystem;

namespace hfx::cli {

namespace {

struct SweepArgs {
  std::string plan, out, engine = "local", run_id, old_dir, new_dir;
  int jobs = 0, task = -1;
  bool resume = false, dry_run = false;
};

void run_sweep(const SweepArgs& a, bool jobs_given) {
  if (a.plan.empty()) throw UsageError("sweep", "expected a plan file (PLAN.json or PLAN.yaml), got none");
  if (a.dry_run) {
    std::puts(sweep::describe_tasks(sweep::load_plan(a.plan)).dump(2).c_str());
    return;
  }
  if (a.out.empty()) throw UsageError("sweep", "expected -o RESULTS, got none");
  if (a.engine != "local" && a.engine != "slurm")
    throw UsageError("sweep", fmt::format("expected --engine local or slurm, got '{}'", a.engine));
  if (a.engine == "slurm" && jobs_given)
    throw UsageError(
        "sweep", "expected --jobs only with --engine local, got it with slurm (Slurm schedules the tasks)");
  sweep::Plan plan = sweep::load_plan(a.plan);
  fs::path results = fs::absolute(a.out);
  if (a.task >= 0) {
    if (a.task >= static_cast<int>(plan.tasks.size()))
      throw UsageError("sweep", fmt::format("expected --task 0..{}, got {}", plan.tasks.size() - 1, a.task));
    fs::create_directories(results / "tasks");
    std::string run_id = a.run_id.empty() ? sweep::new_run_id() : a.run_id;
    sweep::json r = sweep::run_task(plan, plan.tasks[a.task], results, run_id);
    fmt::print("{}: {}{}\n", r.value("id", ""), r.value("status", ""),
               r.contains("reason") ? "  " + r.value("reason", "") : "");
    if (r.value("status", "") != "passed")
      throw Error("sweep", fmt::format("task {} {}", r.value("id", ""), r.value("status", "")));
    return;
  }
  fs::create_directories(results / "tasks");
  io::write_file_atomic((results / "plan.json").string(), plan.source.dump(2));
  // Tasks (local processes and Slurm array tasks) read the copy, whose model paths are absolute.
  plan = sweep::load_plan(results / "plan.json");
  std::vector<const sweep::Task*> todo;
  if (a.resume)
    todo = sweep::tasks_to_resume(plan, results);
  else
    for (const auto& t : plan.tasks) todo.push_back(&t);
  std::string run_id = sweep::new_run_id();
  fmt::print("sweep {}: {} tasks ({} models x {} variants), running {} on {}{}\n", plan.name,
             plan.tasks.size(), plan.models.size(), plan.variants.size(), todo.size(), a.engine,
             a.resume ? " (resume)" : "");
  std::fflush(stdout);
  if (!todo.empty()) {
    if (a.engine == "slurm") {
      sweep::run_slurm(plan, todo, results, run_id);
    } else {
      int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      int jobs = a.jobs > 0 ? a.jobs : std::max(1, hw / plan.resources.cpus);
      sweep::run_local(plan, todo, results, jobs, run_id);
    }
  }
  sweep::json s = sweep::write_summary(plan, results, a.engine);
  std::fputs(sweep::render_table(s).c_str(), stdout);
  fmt::print("summary: {} and {}\n", (results / "summary.json").string(),
             (results / "summary.html").string());
  std::fflush(stdout);
  if (!s.value("passed", false)) {
    int bad = 0;
    for (const auto& t : s["tasks"]) bad += t.value("status", "") != "passed";
    throw Error("sweep",
                fmt::format("{} of {} tasks did not pass (see the table above; rerun them with --resume)",
                            bad, s["tasks"].size()));
  }
}

}  // namespace

void register_sweep(CLI::App& app) {
  auto a = std::make_shared<SweepArgs>();
  auto* cmd =
      app.add_subcommand("sweep", "Export and verify a plan of models x variants, locally or on Slurm");
  cmd->footer(
      "Plan (JSON, or the same keys in YAML as PLAN.yaml):\n"
      "  {\"name\": \"zoo\", \"models\": [\"tiny-llama\", {\"name\": \"gpt2\", \"path\": \"ckpt/gpt2\"},\n"
      "              \"org/model@main\", {\"name\": \"m\", \"id\": \"org/other\"}],\n"
      "   \"variants\": [{\"format\": \"onnx\"}, {\"name\": \"ort\", \"format\": \"onnx\", \"target\": "
      "\"ort\"},\n"
      "                {\"format\": \"executorch\"}, {\"format\": \"dynamo\"},\n"
      "                {\"format\": \"gguf\", \"quantize\": [\"q8_0\"]}],\n"
      "   \"dtypes\": [\"f32\"], \"quantize\": [\"none\"],\n"
      "   \"verify\": {\"tokens\": 8, \"warm_runs\": 1, \"threads\": 1},\n"
      "   \"resources\": {\"cpus\": 1, \"mem_mb\": 2048, \"time_min\": 30}}\n"
      "Models: a folder (relative to the plan) or a model id ORG/NAME[@REV], pinned to its commit.\n"
      "dtypes x quantize expand each variant into <variant>[-<dtype>][-<quantize>], passing --dtype D and\n"
      "--quantize Q to hfx export (f32 and none are its defaults: no suffix, no flag; a value hfx export\n"
      "refuses fails that task with its message). The task runner enforces\n"
      "resources on both engines: mem_mb (resident memory, else out_of_memory), time_min (else timeout),\n"
      "cpus (the task's thread count; locally also the CPUs it is pinned to).\n"
      "A gguf variant is verified by llama.cpp (hfx verify on its folder): of the verify options only "
      "tokens\n"
      "reaches it; a gguf variant that sets shapes, warm_runs or threads itself is refused.\n"
      "Example:\n  hfx sweep zoo.json -o results --jobs 2\n  hfx sweep zoo.yaml --dry-run\n"
      "  hfx sweep zoo.json -o results --engine slurm\n"
      "  hfx sweep zoo.json -o results --resume          (reruns only failed or missing tasks)\n"
      "  hfx sweep compare old-results results\n"
      "Exit status: 0 every task passed, 1 a task did not pass (or compare found something worse), 2 usage.");
  cmd->add_option("plan", a->plan, "Plan file (.json, or .yaml/.yml)");
  cmd->add_option("-o,--out", a->out, "Results folder");
  cmd->add_option("--engine", a->engine, "local (default) | slurm (one sbatch --array job)");
  auto* jobs = cmd->add_option("--jobs", a->jobs, "local: tasks at once (default: cores / resources.cpus)");
  cmd->add_flag("--resume", a->resume, "Run only the tasks without a passed result in RESULTS");
  cmd->add_flag("--dry-run", a->dry_run,
                "Print the expanded tasks (ids, export and verify commands) as JSON; run nothing");
  cmd->add_option("--task", a->task,
                  "Run task K of the plan only (what each local process or array task runs)");
  cmd->add_option("--run-id", a->run_id, "Run id recorded in the task's result (set by the coordinator)");
  auto* cmp = cmd->add_subcommand("compare", "List what got worse between two results folders");
  cmp->add_option("old", a->old_dir, "Earlier results folder")->required()->check(CLI::ExistingDirectory);
  cmp->add_option("new", a->new_dir, "Later results folder")->required()->check(CLI::ExistingDirectory);
  cmp->footer("Example:\n  hfx sweep compare results-v1 results-v2");
  cmp->callback([a] {
    int worse = 0;
    std::fputs(sweep::compare_results(a->old_dir, a->new_dir, worse).c_str(), stdout);
    std::fflush(stdout);
    if (worse)
      throw Error("sweep", fmt::format("{} regressions between {} and {}", worse, a->old_dir, a->new_dir));
  });
  cmd->callback([a, cmp, jobs] {
    if (cmp->parsed()) return;
    run_sweep(*a, jobs->count() > 0);
  });
}

}  // namespace hfx::cli
