// Each op of the op table says, for every backend, how it is taken there (issue 39: an op declared once):
// its one-call lowering declared in the entry (OpLowering), or a route (Route) — a hand-written entry of
// the backend's table, a decomposition by the backend's patches or node fixes, a refusal before capture, or
// (XNNPACK) staying outside the delegate. This test holds every statement to what the backends really do,
// in both directions, and names the op and backend of each disagreement — so a new op without a lowering for
// some backend fails here until its entry says how that backend takes it.
//
// The backends' tables hold the derived (declared) entries beside the hand-written ones and refuse an op that
// is both (tests/export/*_conformance); here "hand_written" means: in the table, not declared.
#include <gtest/gtest.h>

#include <set>

#include "export/dynamo/aten_table.h"
#include "export/executorch/method_emitter.h"
#include "export/executorch/xnnpack_delegate.h"
#include "export/onnx/lowering.h"
#include "hfx/export/registry.h"
#include "hfx/ops/op_schema.h"
#include "support/registry_ops.h"

namespace {

using hfx::OpSchema;
using hfx::Route;

using hfx::testsupport::ops_rewritten_by;

// What a backend really does with an op whose call the entry does not declare.
Route actual(const std::string& backend, const OpSchema& s) {
  if (backend == "onnx") {
    if (hfx::onnx_export::onnx_translation_table().count(s.name)) return Route::hand_written;
    // Stage onnx_patches decomposes every composite op without a translation.
    if (s.composite() || ops_rewritten_by("onnx").count(s.name)) return Route::decomposed;
    return Route::unsaid;
  }
  if (backend == "executorch") {
    if (hfx::et::detail::lowering_table().count(s.name)) return Route::hand_written;
    if (ops_rewritten_by("executorch").count(s.name)) return Route::decomposed;
    return Route::unsaid;
  }
  if (backend == "aten") {
    if (hfx::dynamo::detail::find_entry(s.name)) return Route::hand_written;
    if (ops_rewritten_by("dynamo").count(s.name)) return Route::decomposed;
    return Route::unsaid;
  }
  return hfx::et::xnn::has_rule(s.name) ? Route::hand_written : Route::not_delegated;
}

struct Said {
  bool declared;
  hfx::RouteNote note;
};
Said said(const std::string& backend, const OpSchema& s) {
  const hfx::OpLowering& l = s.lower;
  if (backend == "onnx") return {l.onnx_form != hfx::OnnxForm::None, l.onnx_route};
  if (backend == "executorch") return {l.executorch.declared(), l.executorch_route};
  if (backend == "aten") return {l.aten.declared(), l.aten_route};
  return {!l.xnnpack.empty(), l.xnnpack_route};
}

}  // namespace

TEST(OpRoutes, EveryOpSaysHowEveryBackendTakesItAndTheBackendsAgree) {
  int declared = 0, routed = 0;
  std::string listing;
  for (const OpSchema* s : hfx::all_op_schemas()) {
    listing += s->name;
    for (const char* b : {"onnx", "executorch", "aten", "xnnpack"}) {
      const Said x = said(b, *s);
      const Route real = actual(b, *s);
      listing += std::string("\t") + b + "=" + (x.declared ? "declared" : hfx::route_name(real));
      if (x.declared) {
        declared++;
        // The backend's table holds the derived entry (XNNPACK: the partitioner's declared nodes).
        if (std::string(b) != "xnnpack") {
          EXPECT_NE(real, Route::unsaid)
              << s->name << " on " << b << ": declared, but the backend's table lacks it";
        }
        continue;
      }
      routed++;
      EXPECT_NE(x.note.route, Route::unsaid)
          << s->name << ": no " << b << " lowering declared and no route said; "
          << (real == Route::unsaid
                  ? "declare its " + std::string(b) + " call, or add ." + b +
                        "_route = refused(\"why\") where the backend refuses its models"
                  : "add ." + std::string(b) + "_route = " + hfx::route_name(real) + "(\"why\")")
          << " in its entry in src/ops/op_table.cpp";
      if (x.note.route == Route::refused) {
        EXPECT_FALSE(x.note.why.empty()) << s->name << " on " << b << ": a refusal names where and why";
        EXPECT_EQ(real, Route::unsaid)
            << s->name << " on " << b << ": said refused, but the backend takes it (" << hfx::route_name(real)
            << ")";
        continue;
      }
      EXPECT_EQ(x.note.route, real) << s->name << " on " << b << ": the entry says "
                                    << hfx::route_name(x.note.route) << ", the backend does "
                                    << hfx::route_name(real);
    }
    listing += "\n";
  }
  EXPECT_GT(declared, 100);
  EXPECT_GT(routed, 50);
  if (std::getenv("HFX_PRINT_ROUTES")) std::printf("%s", listing.c_str());
}

// Negative control: the comparison above fails for a route that is wrong — an op whose ONNX translation is
// hand-written, said to be decomposed.
TEST(OpRoutes, AWrongRouteIsFound) {
  const OpSchema& cat = hfx::op_schema("aten.cat");
  ASSERT_FALSE(said("onnx", cat).declared);
  EXPECT_EQ(actual("onnx", cat), Route::hand_written);
  EXPECT_NE(actual("onnx", cat), Route::decomposed);
  // And an op said nothing of is reported as unsaid, not as some route.
  OpSchema bare = cat;
  bare.lower = {};
  EXPECT_EQ(said("onnx", bare).note.route, Route::unsaid);
}
