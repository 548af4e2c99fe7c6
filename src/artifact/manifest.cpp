// The release manifest; see include/hfx/artifact/manifest.h. Hashing streams each file (io::sha256_file);
// .onnx headers are read field by field from the protobuf wire format so that a multi-GB graph is
// never parsed just to learn its IR version and opsets.
#include "hfx/artifact/manifest.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>

#include <flatbuffers/base.h>
#include <fmt/format.h>
#include <google/protobuf/stubs/common.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <openssl/crypto.h>
#include <openssl/opensslv.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>
#ifdef HFX_HAVE_ORT
#include <onnxruntime/onnxruntime_c_api.h>
#endif

#include "hfx/core/error.h"
#include "hfx/core/json.h"
#include "hfx/io/safetensors.h"

#ifndef HFX_VERSION
#define HFX_VERSION "unknown"
#endif

namespace hfx::artifact {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kComp = "manifest";

// The time written into manifest.json. SOURCE_DATE_EPOCH (reproducible-builds.org) replaces the clock,
// so that two exports of the same checkpoint give byte-identical folders, manifest included (CI's
// scripts/repro_check.sh compares the exports of two build trees that way).
std::string utc_now() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"); epoch && *epoch) {
    const std::string v = epoch;
    HFX_CHECK(
        v.size() <= 12 && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }), kComp,
        "expected SOURCE_DATE_EPOCH to be whole seconds since 1970-01-01 UTC, got '{}'; unset it or fix it",
        v);
    t = static_cast<std::time_t>(std::stoll(v));
  }
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string role_of(const std::string& rel) {
  const std::string name = fs::path(rel).filename().string();
  const std::string ext = fs::path(rel).extension().string();
  if (ext == ".safetensors" || ext == ".onnx_data" || ext == ".data" || ext == ".bin" || ext == ".ptd" ||
      name == "model.safetensors.index.json")
    return "weights";
  if (ext == ".onnx" || ext == ".pte" || ext == ".pt2" || ext == ".ort") return "graph";
  if (name == "tokenizer.json" || name == "tokenizer_config.json" || name == "special_tokens_map.json" ||
      name == "chat_template.jinja" || name == "chat_template.json" || name == "merges.txt" ||
      name == "vocab.json" || name == "vocab.txt" || ext == ".model")
    return "tokenizer";
  if (name == "config.json" || name == "generation_config.json" || name == "export_config.json" ||
      name == "session_options.json")
    return "config";
  return "artifact";
}

json contract_to_json(const ShapeContract& c) {
  json j = json::object();
  for (const auto& [input, axes] : c) {
    json a = json::array();
    for (const auto& ax : axes) a.push_back({{"symbol", ax.symbol}, {"min", ax.min}, {"max", ax.max}});
    j[input] = a;
  }
  return j;
}

ShapeContract contract_from_json(const json& j, const std::string& component) {
  ShapeContract c;
  HFX_CHECK(j.is_object(), kComp, "expected contracts.{} to be an object, got {}", component, j.type_name());
  for (const auto& [input, axes] : j.items()) {
    HFX_CHECK(axes.is_array(), kComp, "expected contracts.{}.{} to be a list of axes, got {}", component,
              input, axes.type_name());
    const std::string where = fmt::format("manifest.json contracts.{}.{}[]", component, input);
    for (const auto& a : axes) {
      AxisContract ax;
      ax.symbol = jsonc::get_or<std::string>(a, "symbol", "", kComp, where);
      ax.min = jsonc::get_or<int64_t>(a, "min", 0, kComp, where);
      ax.max = jsonc::get_or<int64_t>(a, "max", 0, kComp, where);
      c[input].push_back(ax);
    }
  }
  return c;
}

// A required field of manifest.json (or of one of its objects, `where`), checked.
template <typename T>
T req(const json& j, const char* key, const std::string& where = "manifest.json") {
  return jsonc::get<T>(j, key, kComp, where);
}
// An optional one: `def` when absent or null.
template <typename T>
T opt(const json& j, const char* key, T def, const std::string& where = "manifest.json") {
  return jsonc::get_or<T>(j, key, std::move(def), kComp, where);
}

// ---- protobuf wire format, just enough for ModelProto's top-level fields ----
bool read_varint(std::istream& in, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    int c = in.get();
    if (c == EOF) return false;
    v |= static_cast<uint64_t>(c & 0x7f) << shift;
    if (!(c & 0x80)) return true;
  }
  return false;
}

// Text from a file goes into manifest.json: invalid UTF-8 becomes U+FFFD, so dumping the JSON cannot fail.
std::string utf8_or_replaced(const std::string& s) {
  std::string out;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  const auto n = static_cast<utf8proc_ssize_t>(s.size());
  for (utf8proc_ssize_t i = 0; i < n;) {
    utf8proc_int32_t c = 0;
    const utf8proc_ssize_t k = utf8proc_iterate(p + i, n - i, &c);
    if (k <= 0) {
      out += "\xEF\xBF\xBD";
      i++;
    } else {
      out.append(s, static_cast<size_t>(i), static_cast<size_t>(k));
      i += k;
    }
  }
  return out;
}

bool read_varint_buf(const std::string& s, size_t& i, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && i < s.size(); shift += 7) {
    unsigned char c = static_cast<unsigned char>(s[i++]);
    v |= static_cast<uint64_t>(c & 0x7f) << shift;
    if (!(c & 0x80)) return true;
  }
  return false;
}

}  // namespace

std::string ChecksumMismatch::message() const {
  if (reason == "missing")
    return fmt::format("[manifest] expected file {} (listed in manifest.json), got none", path);
  if (reason == "size")
    return fmt::format(
        "[manifest] expected {} to have {} bytes and sha256 {}, got {} bytes and sha256 {} (the file changed "
        "after export)",
        path, expected_size, expected_sha256, actual_size, actual_sha256);
  return fmt::format("[manifest] expected {} to have sha256 {}, got {} (the file changed after export)", path,
                     expected_sha256, actual_sha256);
}

json Manifest::to_json() const {
  json j;
  j["schema_version"] = schema_version;
  j["model"] = {{"id", model_id}, {"revision", revision}, {"source_path", source_path}};
  j["format"] = format;
  j["created_at"] = created_at;
  j["hfx_version"] = hfx_version;
  j["dependencies"] = dependencies;
  j["export_config"] = export_config;
  if (!precision.is_null()) j["precision"] = precision;
  json c = json::object();
  for (const auto& [comp, contract] : contracts) c[comp] = contract_to_json(contract);
  j["contracts"] = c;
  if (!relations.empty()) j["relations"] = relations;
  if (!signatures.empty()) j["signatures"] = signatures;
  json files_j = json::array();
  for (const auto& f : files) {
    json fj = {{"path", f.path}, {"role", f.role}, {"size", f.size}, {"sha256", f.sha256}};
    if (!f.details.is_null()) fj["details"] = f.details;
    files_j.push_back(fj);
  }
  j["files"] = files_j;
  j["warnings"] = warnings;
  if (!notes.empty()) j["notes"] = notes;
  j["verify"] = {{"status", verify.status}, {"checked_at", verify.checked_at}, {"report", verify.report}};
  return j;
}

Manifest Manifest::from_json(const json& j) {
  HFX_CHECK(j.is_object(), kComp, "expected manifest.json to hold an object, got {}", j.type_name());
  Manifest m;
  m.schema_version = req<int>(j, "schema_version");
  HFX_CHECK(m.schema_version >= 1 && m.schema_version <= kSchemaVersion, kComp,
            "expected manifest schema_version 1..{}, got {} (written by a newer hfx?)", kSchemaVersion,
            m.schema_version);
  const json& model =
      jsonc::object(jsonc::at(j, "model", kComp, "manifest.json"), kComp, "manifest.json.model");
  m.model_id = req<std::string>(model, "id", "manifest.json.model");
  m.revision = opt<std::string>(model, "revision", "", "manifest.json.model");
  m.source_path = opt<std::string>(model, "source_path", "", "manifest.json.model");
  m.format = opt<std::string>(j, "format", "");
  m.created_at = opt<std::string>(j, "created_at", "");
  m.hfx_version = opt<std::string>(j, "hfx_version", "");
  if (jsonc::has(j, "dependencies")) {
    const json& deps = jsonc::object(j["dependencies"], kComp, "manifest.json.dependencies");
    for (const auto& [name, version] : deps.items())
      m.dependencies[name] = jsonc::as<std::string>(version, kComp, "manifest.json.dependencies." + name);
  }
  m.export_config = j.value("export_config", json());
  m.precision = j.value("precision", json());
  HFX_CHECK(
      m.precision.is_null() || (m.precision.is_object() && m.precision.value("key", json()).is_string()),
      kComp, "expected field 'precision' to be an object with a string 'key', got {}", m.precision.dump());
  if (jsonc::has(j, "contracts"))
    for (const auto& [comp, c] : jsonc::object(j["contracts"], kComp, "manifest.json.contracts").items())
      m.contracts[comp] = contract_from_json(c, comp);
  m.relations = jsonc::has(j, "relations") ? jsonc::object(j["relations"], kComp, "manifest.json.relations")
                                           : json::object();
  m.signatures = jsonc::has(j, "signatures")
                     ? jsonc::object(j["signatures"], kComp, "manifest.json.signatures")
                     : json::object();
  const json& files =
      jsonc::array(jsonc::at(j, "files", kComp, "manifest.json"), kComp, "manifest.json.files");
  for (size_t i = 0; i < files.size(); i++) {
    const json& f = files[i];
    const std::string where = fmt::format("manifest.json.files[{}]", i);
    ManifestFile mf;
    mf.path = req<std::string>(f, "path", where);
    mf.role = opt<std::string>(f, "role", "artifact", where);
    mf.size = req<uint64_t>(f, "size", where);
    mf.sha256 = req<std::string>(f, "sha256", where);
    HFX_CHECK(mf.sha256.size() == 64, kComp, "expected a 64-digit sha256 for {}, got '{}'", mf.path,
              mf.sha256);
    HFX_CHECK(!fs::path(mf.path).is_absolute() && mf.path.find("..") == std::string::npos, kComp,
              "expected a path inside the export folder, got '{}'", mf.path);
    mf.details = f.value("details", json());
    m.files.push_back(std::move(mf));
  }
  if (jsonc::has(j, "warnings"))
    m.warnings = jsonc::as<std::vector<std::string>>(j["warnings"], kComp, "manifest.json.warnings");
  if (jsonc::has(j, "notes"))
    m.notes = jsonc::as<std::vector<std::string>>(j["notes"], kComp, "manifest.json.notes");
  if (jsonc::has(j, "verify")) {
    const json& v = jsonc::object(j["verify"], kComp, "manifest.json.verify");
    m.verify.status = opt<std::string>(v, "status", "unverified", "manifest.json.verify");
    m.verify.checked_at = opt<std::string>(v, "checked_at", "", "manifest.json.verify");
    m.verify.report = v.value("report", json());
    HFX_CHECK(m.verify.status == "unverified" || m.verify.status == "passed" || m.verify.status == "failed",
              kComp, "expected verify.status unverified, passed or failed, got '{}'", m.verify.status);
  }
  return m;
}

void Manifest::write(const std::string& out_dir) const {
  io::write_file_atomic((fs::path(out_dir) / "manifest.json").string(), to_json().dump(2) + "\n");
}

Manifest Manifest::read(const std::string& out_dir) {
  const fs::path p = fs::path(out_dir) / "manifest.json";
  HFX_CHECK(fs::exists(p), kComp, "expected {} (written by hfx export), got none", p.string());
  json j;
  try {
    j = json::parse(io::read_file(p.string()));
  } catch (const json::exception& e) {
    HFX_THROW(kComp, "expected valid JSON in {}, got: {}", p.string(), e.what());
  }
  try {
    return from_json(j);
  } catch (const json::exception& e) {
    HFX_THROW(kComp, "expected a well-formed {}, got: {}", p.string(), e.what());
  }
}

std::optional<ChecksumMismatch> Manifest::verify_checksums(const std::string& out_dir) const {
  for (const auto& f : files) {
    const fs::path p = fs::path(out_dir) / f.path;
    ChecksumMismatch m;
    m.path = f.path;
    m.expected_size = f.size;
    m.expected_sha256 = f.sha256;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) {
      m.reason = "missing";
      return m;
    }
    m.actual_size = fs::file_size(p, ec);
    m.actual_sha256 = io::sha256_file(p.string());
    if (m.actual_size != f.size) {
      m.reason = "size";
      return m;
    }
    if (m.actual_sha256 != f.sha256) {
      m.reason = "sha256";
      return m;
    }
  }
  return std::nullopt;
}

const ManifestFile* Manifest::find(const std::string& path) const {
  for (const auto& f : files)
    if (f.path == path) return &f;
  return nullptr;
}

std::pair<std::string, std::string> model_identity(const std::string& source_dir) {
  fs::path p = fs::weakly_canonical(fs::absolute(source_dir));
  if (p.filename().empty()) p = p.parent_path();
  // .../models--ORG--NAME/snapshots/HASH
  static const std::regex kHash("[0-9a-f]{7,64}");
  const fs::path snap = p.parent_path();
  const std::string repo = snap.parent_path().filename().string();
  if (snap.filename() == "snapshots" && repo.rfind("models--", 0) == 0 &&
      std::regex_match(p.filename().string(), kHash)) {
    std::string id = repo.substr(8);
    for (size_t i; (i = id.find("--")) != std::string::npos;) id.replace(i, 2, "/");
    return {id, p.filename().string()};
  }
  std::string id = p.filename().string();
  const fs::path cfg = p / "config.json";
  if (fs::exists(cfg)) {
    try {
      json j = json::parse(io::read_file(cfg.string()));
      std::string n = j.is_object() && j.contains("_name_or_path") && j["_name_or_path"].is_string()
                          ? j["_name_or_path"].get<std::string>()
                          : std::string();
      if (!n.empty() && !fs::path(n).is_absolute() && n.find("..") == std::string::npos) id = n;
    } catch (const json::exception&) {
    }
  }
  return {id, ""};
}

std::map<std::string, std::string> dependency_versions() {
  std::map<std::string, std::string> d;
  d["hfx"] = HFX_VERSION;
#ifdef HFX_HAVE_ORT
  d["onnxruntime"] = OrtGetApiBase()->GetVersionString();
#endif
  d["onnx_ir_version"] = std::to_string(static_cast<int>(onnx::Version::IR_VERSION));
  const auto& range = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  if (auto it = range.find(""); it != range.end()) d["onnx_max_opset"] = std::to_string(it->second.second);
  const int pb = GOOGLE_PROTOBUF_VERSION;
  d["protobuf"] = fmt::format("{}.{}.{}", pb / 1000000, pb / 1000 % 1000, pb % 1000);
  d["flatbuffers"] = fmt::format("{}.{}.{}", FLATBUFFERS_VERSION_MAJOR, FLATBUFFERS_VERSION_MINOR,
                                 FLATBUFFERS_VERSION_REVISION);
  d["nlohmann_json"] = fmt::format("{}.{}.{}", NLOHMANN_JSON_VERSION_MAJOR, NLOHMANN_JSON_VERSION_MINOR,
                                   NLOHMANN_JSON_VERSION_PATCH);
  d["fmt"] = fmt::format("{}.{}.{}", FMT_VERSION / 10000, FMT_VERSION / 100 % 100, FMT_VERSION % 100);
  d["pcre2"] = fmt::format("{}.{}", PCRE2_MAJOR, PCRE2_MINOR);
  d["utf8proc"] = utf8proc_version();
  d["openssl"] = OpenSSL_version(OPENSSL_VERSION_STRING);
  return d;
}

json onnx_model_info(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  HFX_CHECK(in.good(), kComp, "expected a readable ONNX file {}, got none", path);
  std::error_code ec;
  const uint64_t file_size = fs::file_size(path, ec);
  json info;
  json opsets = json::object();
  uint64_t key = 0;
  while (read_varint(in, key)) {
    const uint64_t field = key >> 3, wire = key & 7;
    uint64_t v = 0;
    if (wire == 0) {
      if (!read_varint(in, v)) break;
      if (field == 1) info["ir_version"] = v;
      if (field == 5) info["model_version"] = v;
    } else if (wire == 2) {
      if (!read_varint(in, v)) break;
      // A length from the file is trusted only as far as the file goes (no allocation beyond it).
      const auto at = static_cast<uint64_t>(in.tellg());
      if (ec || at > file_size || v > file_size - at) break;
      if (field == 8 || field == 2 || field == 3) {  // opset_import, producer_name, producer_version
        std::string buf(v, '\0');
        in.read(buf.data(), static_cast<std::streamsize>(v));
        if (field == 2) info["producer_name"] = utf8_or_replaced(buf);
        if (field == 3) info["producer_version"] = utf8_or_replaced(buf);
        if (field == 8) {
          std::string domain;
          uint64_t version = 0, k = 0, n = 0;
          for (size_t i = 0; i < buf.size() && read_varint_buf(buf, i, k);) {
            if ((k & 7) == 2) {
              if (!read_varint_buf(buf, i, n) || i + n > buf.size()) break;
              if ((k >> 3) == 1) domain = buf.substr(i, n);
              i += n;
            } else if ((k & 7) == 0) {
              if (!read_varint_buf(buf, i, n)) break;
              if ((k >> 3) == 2) version = n;
            } else {
              break;
            }
          }
          opsets[utf8_or_replaced(domain)] = version;
        }
      } else {
        in.seekg(static_cast<std::streamoff>(v), std::ios::cur);  // the graph: skipped, never parsed
      }
    } else if (wire == 1) {
      in.seekg(8, std::ios::cur);
    } else if (wire == 5) {
      in.seekg(4, std::ios::cur);
    } else {
      break;
    }
    if (!in) break;
  }
  info["opsets"] = opsets;
  return info;
}

std::vector<ManifestFile> scan_files(const std::string& out_dir,
                                     const std::map<std::string, std::pair<uint64_t, std::string>>& known) {
  const fs::path root = fs::absolute(out_dir);
  HFX_CHECK(fs::is_directory(root), kComp, "expected an export folder, got '{}' (not a folder)", out_dir);
  std::vector<ManifestFile> files;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (!name.empty() && name[0] == '.') {  // temp files and folders of atomic writers
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file()) continue;
    std::string rel = fs::relative(it->path(), root).generic_string();
    // The manifest itself and the reports `hfx verify` rewrites are not release content.
    if (rel == "manifest.json" || rel == "verify.json" || rel == "verify.html") continue;
    ManifestFile f;
    f.path = rel;
    f.role = role_of(rel);
    f.size = it->file_size();
    auto k = known.find(rel);
    f.sha256 = k != known.end() && k->second.first == f.size && k->second.second.size() == 64
                   ? k->second.second
                   : io::sha256_file(it->path().string());
    if (it->path().extension() == ".onnx") f.details = onnx_model_info(it->path().string());
    files.push_back(std::move(f));
  }
  std::sort(files.begin(), files.end(),
            [](const ManifestFile& a, const ManifestFile& b) { return a.path < b.path; });
  return files;
}

Manifest build_manifest(const std::string& out_dir, const std::string& source_dir, const std::string& format,
                        const json& export_config, const std::map<std::string, ShapeContract>& contracts,
                        const std::map<std::string, std::pair<uint64_t, std::string>>& known_hashes) {
  Manifest m;
  std::tie(m.model_id, m.revision) = model_identity(source_dir);
  m.source_path = fs::weakly_canonical(fs::absolute(source_dir)).string();
  m.format = format;
  m.created_at = utc_now();
  m.hfx_version = HFX_VERSION;
  m.dependencies = dependency_versions();
  m.export_config = export_config;
  m.contracts = contracts;
  m.files = scan_files(out_dir, known_hashes);
  return m;
}

void record_verify_result(const std::string& out_dir, bool passed, const json& report) {
  Manifest m = Manifest::read(out_dir);
  m.verify.status = passed ? "passed" : "failed";
  m.verify.checked_at = utc_now();
  m.verify.report = report;
  m.write(out_dir);
}

}  // namespace hfx::artifact
