// tests/support/onnx_edit.h — changes a weight of an exported ONNX graph, wherever the export stored it, so a
// test can damage an artifact and check that verification notices.
#pragma once
#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace hfx::testsupport {

/// Applies `f` to the float32 values of initializer `name` of the ONNX graph file `graph`: in the graph
/// (raw_data or float_data, the graph saved back) or in the external data file it references (edited in
/// place: every graph sharing that file sees the change). Returns false when the graph has no float32
/// initializer of that name.
inline bool edit_float_initializer(const std::filesystem::path& graph, const std::string& name,
                                   const std::function<void(float*, size_t)>& f) {
  onnx::ModelProto m;
  {
    std::ifstream in(graph, std::ios::binary);
    if (!m.ParseFromIstream(&in)) return false;
  }
  for (auto& t : *m.mutable_graph()->mutable_initializer()) {
    if (t.name() != name || t.data_type() != onnx::TensorProto::FLOAT) continue;
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
      std::string location;
      uint64_t offset = 0, length = 0;
      for (const auto& kv : t.external_data()) {
        if (kv.key() == "location") location = kv.value();
        if (kv.key() == "offset") offset = std::stoull(kv.value());
        if (kv.key() == "length") length = std::stoull(kv.value());
      }
      std::fstream data(graph.parent_path() / location, std::ios::binary | std::ios::in | std::ios::out);
      std::vector<float> v(length / sizeof(float));
      data.seekg(static_cast<std::streamoff>(offset));
      data.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(length));
      f(v.data(), v.size());
      data.seekp(static_cast<std::streamoff>(offset));
      data.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(length));
      return static_cast<bool>(data);
    }
    if (t.has_raw_data()) {
      std::string raw = t.raw_data();
      f(reinterpret_cast<float*>(raw.data()), raw.size() / sizeof(float));
      t.set_raw_data(raw);
    } else {
      f(t.mutable_float_data()->mutable_data(), static_cast<size_t>(t.float_data_size()));
    }
    std::ofstream out(graph, std::ios::binary | std::ios::trunc);
    return m.SerializeToOstream(&out);
  }
  return false;
}

}  // namespace hfx::testsupport
