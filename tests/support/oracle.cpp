// The oracle table of tests/support/oracle.h: one place that knows where each oracle lives.
#include "support/oracle.h"

#include <cstdlib>
#include <filesystem>

namespace fs = std::filesystem;

namespace hfx::test {
namespace {

constexpr const char* kSetup = "run scripts/setup.sh (npm ci in deps/npm installs the pinned packages)";

bool node_on_path() {
  static const bool ok = std::system("node --version > /dev/null 2>&1") == 0;
  return ok;
}
bool npm_has(const char* rel) { return node_on_path() && fs::exists(fs::path(HFX_NODE_MODULES) / rel); }

}  // namespace

const Oracle kNode{"node (Node.js) on PATH", "run scripts/setup.sh (apt installs nodejs and npm)",
                   node_on_path};
const Oracle kTransformersJs{"Transformers.js (node and @huggingface/transformers under " HFX_NODE_MODULES
                             ")",
                             kSetup, [] { return npm_has("@huggingface/transformers/package.json"); }};
const Oracle kTokenizersJs{"HF tokenizers' node binding (node and 'tokenizers' under " HFX_NODE_MODULES ")",
                           kSetup, [] { return npm_has("tokenizers/package.json"); }};
const Oracle kNodeLlamaCpp{"llama.cpp through node-llama-cpp (node and node-llama-cpp under " HFX_NODE_MODULES
                           ")",
                           kSetup, [] { return npm_has("node-llama-cpp/dist/index.js"); }};
const Oracle kHfJinja{"@huggingface/jinja (node and @huggingface/jinja under " HFX_NODE_MODULES ")", kSetup,
                      [] { return npm_has("@huggingface/jinja/package.json"); }};
const Oracle kChromium{"Debian's chromium at /usr/bin/chromium",
                       "run scripts/setup.sh (apt installs chromium)",
                       [] { return fs::exists("/usr/bin/chromium"); }};

bool oracles_required() {
  const char* v = std::getenv("HFX_REQUIRE_ORACLES");
  return v && std::string(v) == "1";
}

std::string oracle_missing(const Oracle& o) {
  if (o.present()) return "";
  return std::string("[oracle] expected ") + o.name + ", got none: " + o.install +
         (oracles_required() ? " (HFX_REQUIRE_ORACLES=1: a missing oracle is a failure)"
                             : " (skipped; HFX_REQUIRE_ORACLES=1, as in CI, makes this a failure)");
}

}  // namespace hfx::test
