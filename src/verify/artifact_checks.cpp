// The checks `hfx verify` makes of an artifact before running anything: an ONNX component's protobuf,
// metadata contracts, graph guards, external data and signature; a .pt2 archive's records through libzip.
// Kept apart from verify.cpp so that the fuzz targets (tests/fuzz) build them alone.
#include <charconv>
#include <fstream>
#include <limits>
#include <optional>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "hfx/core/error.h"
#include "io/zip.h"
#include "verify/verify_internal.h"

namespace hfx::verify {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace detail;

namespace {

std::optional<int64_t> to_int64(const std::string& t) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
  return v;
}

std::string elem_name(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT:
      return "float32";
    case onnx::TensorProto::FLOAT16:
      return "float16";
    case onnx::TensorProto::BFLOAT16:
      return "bfloat16";
    case onnx::TensorProto::DOUBLE:
      return "float64";
    case onnx::TensorProto::INT64:
      return "int64";
    case onnx::TensorProto::INT32:
      return "int32";
    case onnx::TensorProto::BOOL:
      return "bool";
    default:
      return fmt::format("elem_type {}", t);
  }
}

struct DeclDim {
  int64_t value = -1;
  std::string param;
};
struct Decl {
  std::string name, dtype;
  std::vector<DeclDim> dims;
  std::string str() const {
    std::vector<std::string> p;
    for (const auto& d : dims)
      p.push_back(d.value >= 0 ? std::to_string(d.value) : (d.param.empty() ? "?" : d.param));
    return fmt::format("{} [{}]", dtype, fmt::join(p, ", "));
  }
};

Decl decl_of(const onnx::ValueInfoProto& v) {
  Decl d;
  d.name = v.name();
  const auto& tt = v.type().tensor_type();
  d.dtype = elem_name(tt.elem_type());
  for (const auto& dim : tt.shape().dim()) {
    DeclDim x;
    if (dim.has_dim_value())
      x.value = dim.dim_value();
    else
      x.param = dim.dim_param();
    d.dims.push_back(x);
  }
  return d;
}

ShapeContract contract_from_metadata(const std::string& text) {
  ShapeContract c;
  json j = json::parse(text);
  const json& inputs = j.contains("inputs") ? j["inputs"] : j;
  for (const auto& [name, axes] : inputs.items())
    for (const auto& a : axes) {
      AxisContract ax;
      ax.symbol = a.value("symbol", a.value("expr", ""));
      ax.min = a.value("min", int64_t{0});
      ax.max = a.value("max", int64_t{0});
      c[name].push_back(ax);
    }
  return c;
}

std::string ax_str(const AxisContract& a) {
  if (a.symbol.empty() && a.min == a.max) return std::to_string(a.min);
  return fmt::format("{}∈[{}, {}]", a.symbol.empty() ? "?" : a.symbol, a.min, a.max);
}

// Expected signature of a generation component.
struct ExpectedIo {
  std::string name, dtype;
};

// One declared input or output against what generation needs: present, of the dtype, of the rank, with
// the fixed sizes (−1: any); each mismatch is a problem.
void want_decl(std::vector<std::string>& problems, std::map<std::string, Decl>& decls,
               const std::vector<std::string>& order, const std::string& kind, const std::string& name,
               const std::string& dtype, const std::vector<int64_t>& fixed, const std::string& why) {
  auto it = decls.find(name);
  if (it == decls.end()) {
    problems.push_back(fmt::format("expected {} {} ({}), got none; the graph's {}s are [{}]", kind, name, why,
                                   kind, fmt::join(order, ", ")));
    return;
  }
  if (it->second.dtype != dtype)
    problems.push_back(
        fmt::format("expected {} {} of dtype {}, got {}", kind, name, dtype, it->second.dtype));
  if (it->second.dims.size() != fixed.size()) {
    problems.push_back(
        fmt::format("expected {} {} of rank {}, got {}", kind, name, fixed.size(), it->second.str()));
    return;
  }
  for (size_t a = 0; a < fixed.size(); a++)
    if (fixed[a] >= 0 && it->second.dims[a].value >= 0 && it->second.dims[a].value != fixed[a])
      problems.push_back(
          fmt::format("expected {} {} axis {} = {}, got {}", kind, name, a, fixed[a], it->second.str()));
}

// The declared input dims against the contract(s) the artifact and the manifest claim.
void contract_problems(const OnnxComponent& c, std::map<std::string, Decl>& ins,
                       const std::vector<std::string>& in_order, std::vector<std::string>& problems) {
  for (const auto& [source, contract] : c.claims) {
    for (const auto& [input, axes] : contract) {
      auto it = ins.find(input);
      if (it == ins.end()) {
        problems.push_back(
            fmt::format("expected input {} (named by the contract in {}), got none", input, source));
        continue;
      }
      if (it->second.dims.size() != axes.size()) {
        problems.push_back(fmt::format("expected input {} of rank {} (contract in {}), got {}", input,
                                       axes.size(), source, it->second.str()));
        continue;
      }
      for (size_t a = 0; a < axes.size(); a++) {
        const DeclDim& d = it->second.dims[a];
        const AxisContract& ax = axes[a];
        if (d.value >= 0 && (ax.min != d.value || ax.max != d.value))
          problems.push_back(
              fmt::format("expected input {} axis {} to match the contract in {} ({}), got a fixed size {}",
                          input, a, source, ax_str(ax), d.value));
        if (d.value < 0 && ax.symbol.empty() && ax.min == ax.max)
          problems.push_back(
              fmt::format("expected input {} axis {} fixed at {} (contract in {}), got dynamic {}", input, a,
                          ax.min, source, d.param));
      }
    }
    for (const auto& n : in_order)
      if (!contract.count(n))
        problems.push_back(fmt::format("expected input {} in the contract in {}, got none", n, source));
  }
}

void check_signature(Context& cx, OnnxComponent& c, const onnx::ModelProto& m) {
  const ModelConfig& mc = cx.model->config();
  const int64_t L = mc.num_hidden_layers;
  std::map<std::string, Decl> ins, outs;
  std::vector<std::string> in_order, out_order;
  std::set<std::string> inits;
  for (const auto& t : m.graph().initializer()) inits.insert(t.name());
  for (const auto& v : m.graph().input()) {
    if (inits.count(v.name())) continue;
    ins[v.name()] = decl_of(v);
    in_order.push_back(v.name());
  }
  for (const auto& v : m.graph().output()) {
    outs[v.name()] = decl_of(v);
    out_order.push_back(v.name());
  }
  c.has_past = ins.count("past_key_values.0.key") > 0;
  const std::string kv_dtype = outs.count("present.0.key") ? outs["present.0.key"].dtype : "float32";

  std::vector<std::string> problems;
  auto want = [&](std::map<std::string, Decl>& decls, const std::vector<std::string>& order,
                  const std::string& kind, const std::string& name, const std::string& dtype,
                  const std::vector<int64_t>& fixed, const std::string& why) {
    want_decl(problems, decls, order, kind, name, dtype, fixed, why);
  };
  for (const char* n : {"input_ids", "attention_mask", "position_ids"})
    want(ins, in_order, "input", n, "int64", {-1, -1}, "generation feeds it");
  const bool expect_past = c.name != "prefill";
  for (int64_t i = 0; i < L; i++) {
    auto layer = cx.model->cache_layout().at(static_cast<size_t>(i));
    for (const char* kv : {"key", "value"}) {
      if (expect_past)
        want(ins, in_order, "input", fmt::format("past_key_values.{}.{}", i, kv), kv_dtype,
             {-1, layer.num_kv_heads, -1, layer.head_dim}, "the KV cache of the previous step");
      want(outs, out_order, "output", fmt::format("present.{}.{}", i, kv), kv_dtype,
           {-1, layer.num_kv_heads, -1, layer.head_dim},
           fmt::format("generation feeds it back as past_key_values.{}.{}", i, kv));
    }
  }
  want(outs, out_order, "output", "logits", "float32", {-1, -1, mc.vocab_size}, "next-token scores");
  for (const auto& n : in_order)
    if (n != "input_ids" && n != "attention_mask" && n != "position_ids" &&
        n.rfind("past_key_values.", 0) != 0)
      problems.push_back(
          fmt::format("expected only generation inputs, got an extra input {} ({})", n, ins[n].str()));

  contract_problems(c, ins, in_order, problems);
  c.signature_ok = problems.empty();
  json io = {{"inputs", json::object()}, {"outputs", json::object()}};
  for (const auto& n : in_order) io["inputs"][n] = ins[n].str();
  for (const auto& n : out_order) io["outputs"][n] = outs[n].str();
  c.info["signature"] = io;
  if (problems.empty())
    cx.add(c.name, "signature", "passed",
           fmt::format("{} inputs, {} outputs match the generation signature and the contract ({})",
                       in_order.size(), out_order.size(), c.contract_source),
           io);
  else
    cx.add(c.name, "signature", "failed", problems.front(), {{"problems", problems}, {"io", io}});
}

// The contract's ranges against what the graph itself enforces (guards, fixed sizes) and the model.
void check_contract_ranges(Context& cx, OnnxComponent& c) {
  std::vector<std::string> problems, notes;
  for (const auto& [source, contract] : c.claims)
    for (const auto& [input, axes] : contract)
      for (size_t a = 0; a < axes.size(); a++) {
        const AxisContract& ax = axes[a];
        if (ax.symbol.empty()) continue;
        for (const GraphGuard& g : c.guards) {
          if (g.symbol != ax.symbol) continue;
          if (ax.max > g.max || ax.min < g.min)
            problems.push_back(
                fmt::format("expected the contract in {} to keep {} (input {} axis {}) within what the graph "
                            "accepts [{}, {}], got [{}, {}]: "
                            "the graph rejects it (node '{}')",
                            source, ax.symbol, input, a, g.min, g.max, ax.min, ax.max, g.node));
        }
      }
  const int64_t mpe = cx.model->config().max_position_embeddings;
  auto [smin, smax] = contract_range(c.contract, "attention_mask", 1);
  if (mpe > 0 && smax > mpe)
    notes.push_back(fmt::format(
        "the contract allows {} total positions, beyond max_position_embeddings {} (RoPE extrapolates; "
        "learned position tables cannot)",
        smax, mpe));
  json guards = json::array();
  for (const auto& g : c.guards)
    guards.push_back(
        {{"symbol", g.symbol}, {"min", g.min}, {"max", g.max}, {"input", g.input}, {"axis", g.axis}});
  c.info["guards"] = guards;
  if (!problems.empty())
    cx.add(c.name, "shapes", "failed", problems.front(), {{"problems", problems}, {"notes", notes}});
  else
    cx.add(c.name, "contract", "passed",
           fmt::format("every contract range lies within the graph's own checks ({} guards){}",
                       c.guards.size(), notes.empty() ? "" : "; note: " + notes.front()),
           {{"guards", guards}, {"notes", notes}});
}

}  // namespace

namespace detail {

namespace {

// The contracts the component claims: the artifact's own metadata first (it wins), then the manifest's.
void read_claims(Context& cx, OnnxComponent& c, const onnx::ModelProto& m,
                 const std::optional<artifact::Manifest>& manifest) {
  for (const auto& p : m.metadata_props())
    if (p.key() == "hfx.contract") {
      try {
        c.claims.push_back({"onnx metadata hfx.contract of " + c.rel, contract_from_metadata(p.value())});
      } catch (const std::exception& e) {
        cx.add(c.name, "signature", "failed",
               fmt::format("expected JSON in {} metadata hfx.contract, got: {}", c.rel, e.what()));
      }
    }
  if (manifest) {
    auto it = manifest->contracts.find(c.name);
    if (it != manifest->contracts.end() && !it->second.empty())
      c.claims.push_back({"manifest.json contracts." + c.name, it->second});
  }
  if (!c.claims.empty()) {
    c.contract = c.claims.front().second;
    c.contract_source = c.claims.front().first;
  } else {
    c.contract_source = "none";
  }
}

// Guards the graph enforces, and the op inventory (`ops`: op type → nodes).
void read_guards(Context& cx, OnnxComponent& c, const onnx::ModelProto& m,
                 std::map<std::string, int64_t>& ops) {
  // Guards the graph enforces: Reshape nodes named "hfx.contract: SYMBOL in [a, b] (INPUT axis N)".
  static const std::regex guard_re(
      R"(^hfx\.contract: (.+) in \[(-?\d+), (-?\d+|inf)\] \((\S+) axis (\d+)\))");
  for (const auto& n : m.graph().node()) {
    ops[n.domain().empty() ? n.op_type() : n.domain() + "::" + n.op_type()]++;
    std::smatch sm;
    const std::string& nm = n.name();
    // std::regex recurses per character: only names that can be guards, of a sane length, are matched.
    if (nm.rfind("hfx.contract: ", 0) != 0 || nm.size() > 1024 || !std::regex_search(nm, sm, guard_re))
      continue;
    GraphGuard g;
    g.symbol = sm[1];
    auto min = to_int64(sm[2]),
         max = sm[3] == "inf" ? std::optional<int64_t>(std::numeric_limits<int64_t>::max()) : to_int64(sm[3]);
    auto axis = to_int64(sm[5]);
    if (!min || !max || !axis || *axis > 64) {
      cx.add(c.name, "contract", "failed",
             fmt::format("expected guard bounds that fit in int64 and an axis below 64, got node '{}'", nm));
      continue;
    }
    g.min = *min;
    g.max = *max;
    g.input = sm[4];
    g.axis = static_cast<int>(*axis);
    g.node = nm;
    c.guards.push_back(g);
  }
}

// The bytes of the graph and its external data files (kept next to it); −1 after a failed check.
int64_t artifact_bytes(Context& cx, OnnxComponent& c, const onnx::ModelProto& m) {
  int64_t bytes = static_cast<int64_t>(fs::file_size(c.path));
  // External data files next to the graph.
  std::set<std::string> ext;
  for (const auto& t : m.graph().initializer())
    for (const auto& e : t.external_data())
      if (e.key() == "location") ext.insert(e.value());
  for (const auto& e : ext) {
    // The ONNX spec keeps external data next to the graph: a location that is absolute or climbs out is
    // refused.
    const fs::path rel(e);
    bool escapes = e.empty() || rel.is_absolute();
    for (const auto& part : rel) escapes = escapes || part == "..";
    if (escapes) {
      cx.add(c.name, "load", "failed",
             fmt::format("expected external data locations inside the folder of {}, got '{}'", c.rel, e));
      return -1;
    }
    fs::path p = c.path.parent_path() / rel;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) {
      cx.add(c.name, "load", "failed",
             fmt::format("expected the external data file {} of {}, got none", e, c.rel));
      return -1;
    }
    bytes += static_cast<int64_t>(fs::file_size(p));
  }
  return bytes;
}

}  // namespace

void check_onnx_static(Context& cx, OnnxComponent& c, const std::optional<artifact::Manifest>& manifest) {
  onnx::ModelProto m;
  {
    std::ifstream f(c.path, std::ios::binary);
    if (!f || !m.ParseFromIstream(&f)) {
      cx.add(c.name, "load", "failed",
             fmt::format("expected {} to parse as an ONNX model, got a malformed protobuf ({} bytes; "
                         "truncated or corrupted?)",
                         c.rel, fs::exists(c.path) ? fs::file_size(c.path) : 0));
      return;
    }
  }
  read_claims(cx, c, m, manifest);
  std::map<std::string, int64_t> ops;
  read_guards(cx, c, m, ops);
  const int64_t bytes = artifact_bytes(cx, c, m);
  if (bytes < 0) return;
  c.info["file"] = c.rel;
  c.info["size_bytes"] = bytes;
  c.info["ops"] = ops;
  c.info["nodes"] = m.graph().node_size();
  c.info["contract_source"] = c.contract_source;
  cx.add(c.name, "size", "info",
         fmt::format("{} = {:.2f} MiB ({} nodes, {} op types)", c.rel, bytes / 1048576.0,
                     m.graph().node_size(), ops.size()),
         {{"bytes", bytes}});
  check_signature(cx, c, m);
  check_contract_ranges(cx, c);
}

Pt2Structure read_pt2_structure(const std::string& bytes) {
  io::ZipReader zip(bytes);
  Pt2Structure st;
  const auto& recs = zip.records();
  for (size_t i = 0; i < recs.size(); i++) {
    const std::string& n = recs[i].name;
    st.names.push_back(n);
    if (n.find("/data/weights/") != std::string::npos) st.has_weights = true;
    if (n.find("archive_format") != std::string::npos || n.find("/version") != std::string::npos)
      st.has_version = true;
    if (n.find("/models/") == std::string::npos || n.size() <= 5 || n.substr(n.size() - 5) != ".json") {
      // Every other record (the weights too) is read once: libzip checks its CRC-32, so a damaged byte fails
      // here.
      zip.read(i);
      continue;
    }
    // The ExportedProgram itself must be JSON; reading it also inflates it through libzip's bounds.
    const std::string text = zip.read(i);
    HFX_CHECK(json::accept(text), "pt2",
              "expected record {} to hold a JSON ExportedProgram, got {} bytes that do not parse", n,
              text.size());
    st.programs++;
  }
  return st;
}

}  // namespace detail

}  // namespace hfx::verify
