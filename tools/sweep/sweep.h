// tools/sweep/sweep.h — `hfx sweep`: a plan of checkpoints × export variants expanded into tasks, each one
// `hfx export` + `hfx verify` run by the hfx binary itself as subprocesses, on this machine (engine local)
// or as one Slurm job array (engine slurm), and the results gathered into summary.json, a terminal table
// and summary.html.
//
// Results folder layout (one source of truth per fact: every task's result.json):
//   RESULTS/plan.json                 the plan as run (paths made absolute)
//   RESULTS/tasks/<id>/result.json    status, exit codes, signal, duration, worst error, sizes, reason
//   RESULTS/tasks/<id>/{export,verify}.log, export/ (the export folder with manifest.json, verify.json/html)
//   RESULTS/summary.json, summary.html
//   RESULTS/slurm/                    engine slurm: the batch script and each array task's log
// A task writes into RESULTS/tasks/.<id>.tmp.<pid> and renames it into place when it ends, so the
// outputs of a task killed mid-way never count; the coordinator records such a task as killed.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hfx::sweep {

namespace fs = std::filesystem;
using nlohmann::json;

/// Resources one task asks for: Slurm --cpus-per-task, --mem, --time. The task runner itself (the same on
/// both engines) kills a step whose resident memory passes mem_mb (reported out_of_memory) or that runs
/// past time_min (reported timeout); the local engine also pins each task to `cpus` CPUs of its own.
struct Resources {
  int cpus = 1;
  int64_t mem_mb = 2048;
  double time_min = 30;  // minutes, fractions allowed (Slurm gets it rounded up to whole minutes)
};

/// One export variant: `hfx export MODEL --format F [--target T] [--backend B] [--opset N] [--static]
/// [--external-data] [--dtype D] [--quantize Q] ARGS...` then `hfx verify OUT VERIFY_ARGS...`. A plan
/// variant with `dtypes` × `quantize` lists expands into one Variant per pair, named
/// `<base>[-<dtype>][-<quantize>]` (f32 and none, hfx export's defaults, add no suffix and no flag).
struct Variant {
  std::string name, base, format, target, backend;
  std::string dtype = "f32", quantize = "none";
  int opset = 0;  // 0: hfx export's default
  bool is_static = false, external_data = false;
  std::vector<std::string> export_args, verify_args;
};

struct Model {
  std::string name;
  fs::path path;                      // absolute checkpoint folder (for a model id: its cache snapshot)
  std::string id;                     // model id pinned to its commit, ORG/NAME@COMMIT; empty for a folder
  std::vector<std::string> variants;  // variants this model runs, by name or base name (empty: all)
};

/// One expanded task: model × variant, with its stable id `<model>.<variant>` and its index in the plan.
struct Task {
  int index = 0;
  std::string id;
  const Model* model = nullptr;
  const Variant* variant = nullptr;
};

struct Plan {
  std::string name;
  fs::path file;  // the plan file as given
  std::vector<Model> models;
  std::vector<Variant> variants;
  Resources resources;
  json source;              // the plan with model paths made absolute (written to RESULTS/plan.json)
  std::vector<Task> tasks;  // models × variants (a model's own variant list if it has one), model-major
};

/// Reads and expands a JSON or YAML (.yaml/.yml) plan; relative model paths are relative to the plan file,
/// model ids (ORG/NAME[@REV]) are resolved through the Hugging Face cache as `hfx export` resolves them
/// (downloading unless HF_HUB_OFFLINE=1) and pinned to their commit, so every task reads the same snapshot
/// offline. A file that does not parse is a cli::UsageError (exit 2); an unknown key, wrong type or missing
/// checkpoint is an hfx::Error naming the key.
Plan load_plan(const fs::path& file);

/// A YAML plan as the JSON document it spells (plain scalars typed by YAML 1.2 core rules: null, bool,
/// int, float, else string; quoted scalars stay strings). Throws cli::UsageError with line and column.
json yaml_to_json(const std::string& text, const fs::path& file);

/// The expanded plan for `hfx sweep PLAN --dry-run`: every task's id, model, variant, dtype, quantize and
/// its export and verify commands.
json describe_tasks(const Plan& plan);

/// The argv (without the binary) of the task's export and verify steps, `out` the export folder.
std::vector<std::string> export_argv(const Task& t, const fs::path& out);
std::vector<std::string> verify_argv(const Task& t, const fs::path& out);

/// Path of this hfx binary (/proc/self/exe), the one every task runs.
std::string self_exe();

/// How one process ended: exit code, or the signal that killed it, or killed by the task's time or memory
/// limit; and the largest resident set size seen while it ran.
struct ProcEnd {
  int exit_code = -1;
  int signal = 0;
  bool timed_out = false;
  bool out_of_memory = false;
  int64_t peak_rss = 0;
  double seconds = 0;
};

/// Runs argv (argv[0] a path) with stdout+stderr to `log`; killed (SIGKILL) at `deadline_s` seconds
/// (<= 0: none) or when its resident set (VmRSS, sampled every 20 ms) passes `mem_limit` bytes (<= 0:
/// none). The child dies with its parent (PR_SET_PDEATHSIG), so killing a task kills its steps.
ProcEnd run_process(const std::vector<std::string>& argv, const fs::path& log, double deadline_s,
                    int64_t mem_limit = 0);

/// Runs one task (`hfx sweep PLAN --task K`): export + verify into a temporary folder renamed into
/// RESULTS/tasks/<id>. Returns the result.json it wrote.
json run_task(const Plan& plan, const Task& task, const fs::path& results, const std::string& run_id);

/// The result folder of a task, and its result.json if one exists (nullopt otherwise).
fs::path task_dir(const fs::path& results, const Task& t);
std::optional<json> read_result(const fs::path& results, const Task& t);

/// Writes a result for a task whose runner ended without writing one (killed, cancelled, out of memory,
/// timed out by the scheduler): `status` killed|out_of_memory|timeout|failed and `reason` say how. Stale
/// temporary folders of the task are removed; nothing the runner left counts.
void record_lost_task(const fs::path& results, const Task& t, const std::string& run_id,
                      const std::string& status, int exit_code, int signal, const std::string& reason);

/// The tasks `--resume` must run: those without a result or whose result did not pass.
std::vector<const Task*> tasks_to_resume(const Plan& plan, const fs::path& results);

/// A fresh run id (UTC time and pid): results carry it, so a coordinator knows which results are new.
std::string new_run_id();

/// Engine local: runs `tasks` with at most `jobs` task processes at once (each `hfx sweep --task K`), each
/// pinned (sched_setaffinity) to resources.cpus CPUs no other running task holds.
void run_local(const Plan& plan, const std::vector<const Task*>& tasks, const fs::path& results, int jobs,
               const std::string& run_id);

/// Engine slurm: writes RESULTS/slurm/sweep.sbatch, submits one `sbatch --array` job for `tasks`, polls
/// `scontrol show job` until every array task has ended and records those that ended without a result.
void run_slurm(const Plan& plan, const std::vector<const Task*>& tasks, const fs::path& results,
               const std::string& run_id);

/// Gathers every task's result.json into RESULTS/summary.json and RESULTS/summary.html; returns the summary.
json write_summary(const Plan& plan, const fs::path& results, const std::string& engine);

/// The terminal table: model rows × variant columns (status and worst error), then each failure's reason.
std::string render_table(const json& summary);

/// The HTML page: the same matrix with sizes, load time and decode speed, each cell linking its verify
/// report.
std::string render_html(const json& summary);

/// `hfx sweep compare OLD NEW`: what got worse between two results folders (status, numerics, size,
/// speed). Returns the report text; `worse` is set to the number of regressions.
std::string compare_results(const fs::path& old_dir, const fs::path& new_dir, int& worse);

}  // namespace hfx::sweep
