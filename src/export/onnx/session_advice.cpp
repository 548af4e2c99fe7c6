// The ONNX Runtime session advice of an export (hfx/export/onnx.h): decided from the op types of each
// written graph, stored as onnx/session_options.json, read back by every hfx consumer of the folder.
#include "hfx/core/error.h"
#include "hfx/core/json.h"
#include "hfx/export/onnx.h"
#include "hfx/io/safetensors.h"

namespace hfx {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kFile = "session_options.json";
constexpr const char* kPrepackKey = "session.disable_prepacking";

// The ops whose ONNX Runtime CPU kernels compute from weights MLAS packs at load (their PrePack hook): with
// prepacking off they unpack or requantize every block on every call. Measured for MatMulNBits (int4 and
// int8 weights, with and without int8 activations): decode 0.2 vs 21.6 tok/s at the 1B shape
// (docs/benchmarks.md). A graph holding only float MatMuls gains nothing at decode from packing and pays
// the packed copy at load (1B f32: 28.9 s vs 3.3 s session creation).
// Not listed: DequantizeLinear (the standard target's quantized form). With prepacking on, ONNX Runtime's
// fusion of a blocked DequantizeLinear → MatMul into MatMulNBits runs it with int8 activations (its
// session.qdq_matmulnbits_accuracy_level defaults to 4), other math than the graph states: the greedy tokens
// of a GPTQ llama changed (tests/quant/ort_prequantized_test.cpp). Those graphs keep prepacking off.
constexpr const char* kPackedWeightOps[] = {"MatMulNBits",           "GatherBlockQuantized",
                                            "DynamicQuantizeMatMul", "MatMulIntegerToFloat",
                                            "MatMulInteger",         "QLinearMatMul"};

}  // namespace

std::map<std::string, std::string> OrtSessionAdvice::config_entries() const {
  return {{kPrepackKey, prepacking ? "0" : "1"}};
}

OrtSessionAdvice advise_ort_session(const std::map<std::string, int64_t>& op_counts) {
  std::string held;
  for (const char* op : kPackedWeightOps) {
    auto it = op_counts.find(op);
    if (it == op_counts.end() || it->second == 0) continue;
    held += (held.empty() ? "" : ", ") + fmt::format("{} x{}", op, it->second);
  }
  if (!held.empty())
    return {true, "prepacking on: the graph holds " + held +
                      ", whose ONNX Runtime kernels compute from the weights packed at load"};
  return {false,
          "prepacking off: the graph's MatMuls read float weights in place (packing copies every weight at "
          "load and single-row decode does not use the copy)"};
}

void write_ort_session_advice(const std::string& out_dir,
                              const std::map<std::string, OrtSessionAdvice>& advice) {
  json programs = json::object();
  for (const auto& [program, a] : advice)
    programs[program] = {{"config_entries", a.config_entries()}, {"why", a.why}};
  json j = {{"_comment",
             "ONNX Runtime session config entries each graph of this folder was exported to run with "
             "(SessionOptions.add_session_config_entry(key, value) for each); written by hfx export"},
            {"programs", programs}};
  io::write_file_atomic((fs::path(out_dir) / "onnx" / kFile).string(), j.dump(2) + "\n");
}

std::optional<OrtSessionAdvice> read_ort_session_advice(const fs::path& model) {
  const fs::path file = model.parent_path() / kFile;
  if (!fs::exists(file)) return std::nullopt;
  const std::string where = file.string();
  const json j = jsonc::parse(io::read_file(where), "onnx", where);
  // value() returns copies: held here, not bound to references into temporaries.
  const json programs = jsonc::object(j, "onnx", where).value("programs", json::object());
  jsonc::object(programs, "onnx", where + " programs");
  const std::string program = model.stem().string();
  if (!programs.contains(program)) return std::nullopt;
  const std::string at = where + " programs." + program;
  const json entries = jsonc::object(programs[program], "onnx", at).value("config_entries", json::object());
  jsonc::object(entries, "onnx", at + ".config_entries");
  OrtSessionAdvice a;
  const std::string v =
      entries.contains(kPrepackKey)
          ? jsonc::as<std::string>(entries[kPrepackKey], "onnx", at + ".config_entries." + kPrepackKey)
          : "0";
  if (v != "0" && v != "1")
    HFX_THROW("onnx", "expected {}.config_entries.{} to be \"0\" or \"1\", got \"{}\"", at, kPrepackKey, v);
  a.prepacking = v == "0";
  if (programs[program].contains("why"))
    a.why = jsonc::as<std::string>(programs[program]["why"], "onnx", at + ".why");
  return a;
}

}  // namespace hfx
