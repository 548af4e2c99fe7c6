// hfx/ops/patch_point.h — swappable op handlers used by export patches.
//
// While a patch is installed for an op name (or a model-hook path) in a `PatchTable`, a TraceBuilder
// built over that table routes the op to the patch's handler instead of recording it directly. Handlers
// run with their own path disabled, so a handler may call the original op without recursing.
// Installation is done by PatchScope (hfx/export/registry.h), which restores the previous state on exit.
//
// A table belongs to one export (its ExportContext): nothing here is process-global, so exports on
// different threads never see each other's patches. One table is used by one thread at a time.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "hfx/ops/builder.h"

namespace hfx {

using OpHandler =
    std::function<std::vector<Var>(Builder& b, const std::vector<Var>& inputs, const Attrs& attrs)>;

/// The patch points of one export: path → installed handler, plus the paths whose handler is running.
class PatchTable {
 public:
  /// The handler installed at `path`, or nullptr (also nullptr while that handler is running).
  const OpHandler* active(const std::string& path) const;
  /// Installs `h` at `path` (nullptr uninstalls) and returns what was there before.
  std::unique_ptr<OpHandler> swap(const std::string& path, std::unique_ptr<OpHandler> h);
  /// Number of installed patches (exporters and tests check restoration with it).
  size_t size() const { return handlers_.size(); }

  /// Marks `path` of `table` as running for its lifetime (re-entrancy guard).
  class Running {
   public:
    Running(PatchTable& table, const std::string& path);
    ~Running();
    Running(const Running&) = delete;
    Running& operator=(const Running&) = delete;

   private:
    PatchTable& table_;
    std::string path_;
  };

 private:
  std::map<std::string, std::unique_ptr<OpHandler>> handlers_;
  std::set<std::string> running_;
};

}  // namespace hfx
