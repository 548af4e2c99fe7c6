// hfx/ops/patch_point.h — swappable op handlers used by export patches.
//
// While a patch is installed for an op name (or a model-hook path), TraceBuilder::call routes that op
// to the patch's handler instead of recording it directly. Handlers run with their own path disabled,
// so a handler may call the original op without recursing. Installation is done by PatchScope
// (hfx/export/registry.h), which restores the previous state on exit.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hfx/ops/builder.h"

namespace hfx {

using OpHandler = std::function<std::vector<Var>(Builder& b, const std::vector<Var>& inputs, const Attrs& attrs)>;

/// The handler installed at `path`, or nullptr (also nullptr while that handler is running).
const OpHandler* active_patch(const std::string& path);
/// Installs `h` at `path` (nullptr uninstalls) and returns what was there before.
std::unique_ptr<OpHandler> swap_patch(const std::string& path, std::unique_ptr<OpHandler> h);
/// Number of installed patches (tests check restoration with it).
size_t installed_patch_count();

/// Marks `path` as running for its lifetime (re-entrancy guard).
class PatchRunning {
 public:
  explicit PatchRunning(const std::string& path);
  ~PatchRunning();

 private:
  std::string path_;
};

}  // namespace hfx
