// `hfx verify OUT --save-calls DIR` (through the CLI binary, HFX_CLI): for an encoder-decoder .pte every
// replayed method call is written as a call fixture (src/verify/call_fixture.h) that reads back to a call
// the .pte reader reproduces — eager's outputs from the fixture's inputs — and every out-of-contract probe
// as a fixture the reader refuses. A truncated or foreign file is refused naming the path. The same
// fixtures are what hfx verify's runtime judge (src/verify/runtime_judge.py) feeds to ExecuTorch's runtime.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "support/shell.h"
#include "verify/call_fixture.h"
#include "verify/pte_reader.h"

namespace fs = std::filesystem;

namespace {

using hfx::testsupport::Proc;
using hfx::testsupport::sh;

fs::path root() { return fs::path(testing::TempDir()) / ("hfx_call_fixture_" + std::to_string(::getpid())); }

TEST(CallFixture, SavedCallsReplayToEagerAndProbesAreRefused) {
  fs::remove_all(root());
  const fs::path ck = root() / "t5-ck", out = root() / "t5", calls = root() / "calls";
  const std::string cli = HFX_CLI;
  ASSERT_EQ(sh(cli + " create-tiny t5 -o " + ck.string()).rc, 0);
  Proc e = sh(cli + " export " + ck.string() + " --format executorch --backend xnnpack -o " + out.string());
  ASSERT_EQ(e.rc, 0) << e.out;
  Proc v = sh(cli + " verify " + out.string() + " --no-manifest --save-calls " + calls.string());
  ASSERT_EQ(v.rc, 0) << v.out;

  auto prog = hfx::verify::PteProgram::load_file((out / "model.pte").string());
  int runs = 0, probes = 0;
  std::set<std::string> methods;
  for (const auto& f : fs::directory_iterator(calls)) {
    const hfx::verify::CallFixture c = hfx::verify::read_call_fixture(f.path().string());
    methods.insert(c.method);
    auto& m = prog->method(c.method);
    m.reset();
    std::vector<hfx::Tensor> in;
    for (const auto& [name, t] : c.inputs) in.push_back(t);
    if (c.expect_error) {
      EXPECT_TRUE(c.outputs.empty()) << f.path();
      EXPECT_THROW(m.run(in), hfx::Error) << f.path() << ": a probe beyond the contract must be refused";
      probes++;
      continue;
    }
    std::vector<hfx::verify::PteOutput> got = m.run(in);
    ASSERT_EQ(got.size(), c.outputs.size()) << f.path();
    for (size_t i = 0; i < got.size(); i++) {
      const std::vector<float> a = std::get<hfx::Tensor>(got[i]).to_floats(),
                               b = c.outputs[i].second.to_floats();
      ASSERT_EQ(a.size(), b.size()) << c.outputs[i].first;
      for (size_t k = 0; k < a.size(); k++)
        ASSERT_NEAR(a[k], b[k], 1e-4) << c.outputs[i].first << " of " << f.path();
    }
    runs++;
  }
  EXPECT_EQ(methods, (std::set<std::string>{"encoder", "decoder", "decoder_with_past"}));
  EXPECT_GE(runs, 9);
  EXPECT_GE(probes, 3);

  // Damaged files: cut short, or not a fixture at all.
  const fs::path any = fs::directory_iterator(calls)->path();
  std::string bytes = hfx::io::read_file(any.string());
  const fs::path cut = root() / "cut.call", foreign = root() / "foreign.call";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() - 3);
  std::ofstream(foreign, std::ios::binary) << "PK\x03\x04 not a call";
  try {
    hfx::verify::read_call_fixture(cut.string());
    ADD_FAILURE() << "a truncated fixture was read";
  } catch (const hfx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cut.call"), std::string::npos) << e.what();
  }
  EXPECT_THROW(hfx::verify::read_call_fixture(foreign.string()), hfx::Error);
  if (!std::getenv("HFX_VERIFY_KEEP")) fs::remove_all(root());
}

}  // namespace
