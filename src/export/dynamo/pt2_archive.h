// The .pt2 archive (torch.export.save's PT2 archive, archive_version 0): one top-level folder with
// archive_format ("pt2"), archive_version, byteorder, .data/version, models/<name>.json,
// data/weights/weight_N raw bytes + <name>_weights_config.json, data/constants/tensor_N +
// <name>_constants_config.json, data/sample_inputs/<name>.pt (torch.save format) and extra/ files.
// Weights are streamed one tensor at a time from the checkpoint mapping and released after.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "export/dynamo/program.h"
#include "export/dynamo/torch_save.h"
#include "hfx/io/safetensors.h"

namespace hfx::dynamo {

constexpr const char* kArchiveVersion = "0";
constexpr const char* kFileFormatVersion = "6\n";  ///< PyTorchStreamWriter version for PT2 archives

/// Paths inside the archive's top folder.
std::string weights_config_path(const std::string& model);  ///< data/weights/<model>_weights_config.json
std::string constants_config_path(
    const std::string& model);                             ///< data/constants/<model>_constants_config.json
std::string sample_inputs_path(const std::string& model);  ///< data/sample_inputs/<model>.pt

struct Pt2WriteOptions {
  std::string model_name = "model";
  /// Where a parameter's bytes come from: the checkpoint (streamed, then released) or the graph value.
  const io::WeightStore* weights = nullptr;
  PyObj sample_inputs;                       ///< ((), {name: tensor, ...}) or none
  std::map<std::string, std::string> extra;  ///< extra/<name> → content
};

/// Writes `path` (a .pt2). Returns the bytes written.
uint64_t write_pt2(const std::string& path, const SerializedProgram& sp, const Pt2WriteOptions& o);

/// The sample inputs of a graph at its hint sizes, shaped as the program's input treespec.
PyObj sample_inputs_for(const Graph& g, int64_t vocab_size);

/// TensorMeta JSON of a concrete contiguous tensor (used by the payload configs).
nlohmann::json concrete_tensor_meta(DType dt, const Shape& shape);

}  // namespace hfx::dynamo
