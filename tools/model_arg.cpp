// The one place where the CLI turns a MODEL argument into a checkpoint folder (every command that takes
// a model calls resolve_model), so a folder and a model id work the same everywhere.
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "commands.h"
#include "hfx/core/progress.h"
#include "hfx/io/hub.h"

namespace fs = std::filesystem;

namespace hfx::cli {

std::string resolve_model(const std::string& arg) {
  std::error_code ec;
  if (!arg.empty() && fs::is_directory(arg, ec)) return arg;
  if (!hub::looks_like_model_id(arg))
    throw UsageError(
        "hub", fmt::format("expected an existing folder or a model id ORG/NAME[@REVISION], got '{}' (no such "
                           "folder)",
                           arg));
  return resolve_model_id(arg).dir;
}

hub::Snapshot resolve_model_id(const std::string& arg) {
  std::string why;
  std::optional<hub::ModelId> id = hub::parse_model_id(arg, &why);
  if (!id)
    throw UsageError(
        "hub", fmt::format("expected a model id ORG/NAME[@REVISION] or an existing folder, got '{}' ({})",
                           arg, why));
  hub::HubOptions o = hub::HubOptions::from_env();
  Progress bar("download " + id->repo, 0, Progress::Unit::kBytes);
  o.on_bytes = [&bar](uint64_t done, uint64_t total) {
    bar.set_total(total);
    bar.update(done);
  };
  hub::Snapshot s = hub::resolve(*id, o);
  bar.finish();
  if (!s.downloaded.empty())
    fmt::print(stderr, "hfx: downloaded {} file{} of {}@{} ({}) into {}\n", s.downloaded.size(),
               s.downloaded.size() == 1 ? "" : "s", s.repo, s.revision, s.commit, s.dir);
  return s;
}

}  // namespace hfx::cli
