// tests/support/registry_ops.h — what a backend's registries rewrite away, for the coverage tests
// (tests/export/lowering_coverage_test.cpp, tests/export/op_routes_test.cpp).
#pragma once
#include <set>
#include <string>

#include "hfx/export/registry.h"

namespace hfx::testsupport {

/// The ops `backend`'s patches decompose (their paths) or its node fixes rewrite away entirely
/// (NodeFixEntry::ops).
inline std::set<std::string> ops_rewritten_by(const std::string& backend) {
  std::set<std::string> ops;
  for (const PatchEntry& e : patch_registry())
    if (e.backend == backend)
      for (const std::string& p : e.paths) ops.insert(p);
  for (const NodeFixEntry& e : node_fix_registry())
    if (e.backend == backend) ops.insert(e.ops.begin(), e.ops.end());
  return ops;
}

}  // namespace hfx::testsupport
