// `hfx sweep` with model ids in the plan, against the in-suite hub (tests/integration/hub_server.mjs): the
// coordinator resolves each ORG/NAME[@REV] once, as `hfx export` does, and pins it to its commit in
// RESULTS/plan.json; every task then exports that snapshot from the cache without a request, and its
// manifest records the id and commit exactly as `hfx export ID` run directly records them.
#include <fmt/format.h>

#include <fstream>

#include "support/hub_fixture.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace hfx::test {
namespace {

class SweepHub : public HubFixture {};

TEST_F(SweepHub, ModelIdsResolveOncePinnedToTheirCommit) {
  std::ofstream(work_ / "plan.yaml")
      << "models:\n  - org/tiny-llama\n  - {name: llama-v1, id: org/tiny-llama@v1}\n"
         "variants: [{format: onnx}]\n"
         "verify: {tokens: 4, warm_runs: 1, threads: 1, shapes: '1x4,1x3+2'}\n";
  fs::path r = work_ / "results";
  HubProc run = hub_sh(hfx("sweep " + (work_ / "plan.yaml").string() + " -o " + r.string() + " --jobs 2"));
  ASSERT_EQ(run.rc, 0) << run.out;
  // Two ids with a branch or tag: one revision lookup each, by the coordinator; the files once each.
  int api = 0;
  std::map<std::string, int> files;
  for (const auto& q : requests()) {
    std::string url = q["url"];
    if (url.rfind("/api/models/", 0) == 0)
      ++api;
    else if (q["method"] == "GET")
      ++files[url];
  }
  EXPECT_EQ(api, 2);
  for (const auto& [url, n] : files) EXPECT_EQ(n, 1) << url;
  json plan = json::parse(hub_slurp(r / "plan.json"));
  EXPECT_EQ(plan["models"][0],
            json({{"name", "tiny-llama"}, {"id", fmt::format("org/tiny-llama@{}", kMain)}}));
  EXPECT_EQ(plan["models"][1], json({{"name", "llama-v1"}, {"id", fmt::format("org/tiny-llama@{}", kV1)}}));
  // The manifests say what `hfx export org/tiny-llama@v1` run directly says.
  HubProc direct = hub_sh(hfx("export org/tiny-llama@v1 --format onnx -o " + (work_ / "direct").string()));
  ASSERT_EQ(direct.rc, 0) << direct.out;
  json want = json::parse(hub_slurp(work_ / "direct" / "manifest.json"))["model"];
  json got = json::parse(hub_slurp(r / "tasks" / "llama-v1.onnx" / "export" / "manifest.json"))["model"];
  EXPECT_EQ(got["id"], "org/tiny-llama");
  EXPECT_EQ(got["revision"], kV1);
  EXPECT_EQ(got["id"], want["id"]);
  EXPECT_EQ(got["revision"], want["revision"]);
  json main = json::parse(hub_slurp(r / "tasks" / "tiny-llama.onnx" / "export" / "manifest.json"))["model"];
  EXPECT_EQ(main["revision"], kMain);

  // The pinned plan run again offline needs nothing from the hub.
  clear_requests();
  HubProc again = hub_sh(
      hfx("sweep " + (r / "plan.json").string() + " -o " + (work_ / "again").string(), "HF_HUB_OFFLINE=1"));
  EXPECT_EQ(again.rc, 0) << again.out;
  EXPECT_TRUE(requests().empty()) << requests().size() << " requests";

  // An id the hub does not have fails before any task runs, naming the model.
  std::ofstream(work_ / "missing.json")
      << R"({"models": ["org/no-such-model"], "variants": [{"format": "onnx"}]})";
  HubProc missing =
      hub_sh(hfx("sweep " + (work_ / "missing.json").string() + " -o " + (work_ / "m").string()));
  EXPECT_EQ(missing.rc, 1) << missing.out;
  EXPECT_NE(missing.out.find("[hub]"), std::string::npos) << missing.out;
  EXPECT_NE(missing.out.find("org/no-such-model"), std::string::npos) << missing.out;
  EXPECT_FALSE(fs::exists(work_ / "m" / "summary.json"));
}

}  // namespace
}  // namespace hfx::test
