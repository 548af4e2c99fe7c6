// hfx/artifact/manifest.h — the release manifest of an export folder, and releases with rollback.
//
// `OUT/manifest.json` says what an export folder is and whether it may be served: the model id and
// revision (the hub snapshot hash when the source was a HF cache snapshot `.../snapshots/<hash>/`),
// the sha256 and size of every weight, tokenizer, config and artifact file (paths relative to OUT),
// the ONNX IR version and opsets of each .onnx file, the hfx version and the versions of the libraries
// it ran with, the export config, the dynamic-shape contract of each component, and the `verify`
// section that `hfx verify` fills ("unverified" | "passed" | "failed", with its report). The manifest is
// written atomically and carries a schema version.
//
// Releases: `release(OUT, RELEASES)` copies a verified export into RELEASES/<name> through a hidden
// temp folder and a rename, then switches the `current` symlink atomically (a `current.tmp` symlink
// renamed over it) and appends to RELEASES/history.json (atomic). `rollback(RELEASES)` points `current`
// at the previous verified release in the history. Killing either at any point leaves `current` on a
// complete verified release and no half-copied folder under a release name.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hfx/ir/contract.h"

namespace hfx::artifact {

/// One file of an export folder.
struct ManifestFile {
  std::string path;  ///< relative to OUT, '/'-separated
  std::string role;  ///< "weights" | "tokenizer" | "config" | "graph" | "artifact"
  uint64_t size = 0;
  std::string sha256;      ///< lowercase hex
  nlohmann::json details;  ///< e.g. {"ir_version": 8, "opsets": {"": 18}} for .onnx files; null if none
};

/// The `verify` section, filled by `hfx verify`.
struct VerifyRecord {
  std::string status = "unverified";  ///< "unverified" | "passed" | "failed"
  std::string checked_at;             ///< UTC ISO-8601, empty while unverified
  nlohmann::json report;              ///< the verify report (JSON), null while unverified
};

/// The first file whose bytes differ from the manifest.
struct ChecksumMismatch {
  std::string path;
  std::string reason;  ///< "missing" | "size" | "sha256"
  uint64_t expected_size = 0, actual_size = 0;
  std::string expected_sha256, actual_sha256;
  /// "[manifest] expected onnx/model.onnx to have sha256 ab12.., got cd34.. (the file changed after export)"
  std::string message() const;
};

struct Manifest {
  static constexpr int kSchemaVersion = 1;
  int schema_version = kSchemaVersion;
  std::string model_id;  ///< "org/name" from a hub snapshot path, else config _name_or_path, else folder name
  std::string revision;  ///< snapshot hash, empty when unknown
  std::string source_path;  ///< absolute path of the checkpoint folder exported
  std::string format;       ///< "onnx", "executorch", "dynamo"
  std::string created_at;   ///< UTC ISO-8601
  std::string hfx_version;
  std::map<std::string, std::string> dependencies;  ///< library → version
  nlohmann::json export_config;                     ///< ExportConfig::to_json()
  /// ExportConfig::precision(): the resolved weight dtype and verify's tolerance key; null for a manifest
  /// written before hfx recorded it.
  nlohmann::json precision;
  std::map<std::string, ShapeContract> contracts;  ///< component → input → axes
  /// component → the relations between its symbols that the axes cannot state (the capture's deferred
  /// guards: `past_sequence_length + sequence_length <= 128`), each {"what", "expr", "lower", "upper",
  /// "where"}: `lower <= expr <= upper` must hold, and every format's runtime check enforces it.
  nlohmann::json relations = nlohmann::json::object();
  /// component → its calling convention: {"inputs": [{"name", "dtype", "state"?}], "outputs": [names]}, in
  /// the order the artifact takes and returns them (an ExecuTorch method's arguments are the inputs
  /// without "state": true, which it keeps as mutable buffers).
  nlohmann::json signatures = nlohmann::json::object();
  std::vector<ManifestFile> files;
  std::vector<std::string> warnings;  ///< the exporter's warnings (ExportResult::warnings), shown by verify
  std::vector<std::string> notes;     ///< ExportResult::notes (written only when there are some)
  VerifyRecord verify;

  nlohmann::json to_json() const;
  /// Throws hfx::Error("manifest", ...) naming the field on a malformed document or a newer schema.
  static Manifest from_json(const nlohmann::json& j);
  /// Writes OUT/manifest.json atomically.
  void write(const std::string& out_dir) const;
  /// Reads OUT/manifest.json; throws hfx::Error("manifest", ...) if missing or malformed.
  static Manifest read(const std::string& out_dir);
  /// Re-hashes every listed file under `out_dir`; the first mismatch in manifest order, or none.
  std::optional<ChecksumMismatch> verify_checksums(const std::string& out_dir) const;
  const ManifestFile* find(const std::string& path) const;
};

/// Model id and revision of a checkpoint folder: `.../models--ORG--NAME/snapshots/HASH/` gives
/// ("ORG/NAME", "HASH"); otherwise config.json's _name_or_path (when set) or the folder name, and "".
std::pair<std::string, std::string> model_identity(const std::string& source_dir);
/// Versions of hfx and the libraries it was built and runs with (ONNX Runtime when present, onnx IR
/// version and max opset, protobuf, flatbuffers, nlohmann_json, fmt, pcre2, utf8proc, OpenSSL).
std::map<std::string, std::string> dependency_versions();
/// Every file under `out_dir` (manifest.json and hidden temp files excluded), hashed, sorted by path,
/// with its role guessed from its name.
/// `known`: relative path → (size, sha256) already computed (ArtifactFile::sha256); used for a file still of
/// that size, any other file is hashed.
std::vector<ManifestFile> scan_files(
    const std::string& out_dir, const std::map<std::string, std::pair<uint64_t, std::string>>& known = {});
/// ir_version, opset_import and producer of an .onnx file, read without loading the graph.
nlohmann::json onnx_model_info(const std::string& path);

/// A manifest for a finished export folder: identity from `source_dir`, files scanned, verify
/// "unverified". `contracts` maps component → contract (from ExportResult::programs).
Manifest build_manifest(const std::string& out_dir, const std::string& source_dir, const std::string& format,
                        const nlohmann::json& export_config,
                        const std::map<std::string, ShapeContract>& contracts,
                        const std::map<std::string, std::pair<uint64_t, std::string>>& known_hashes = {});
/// Reads OUT/manifest.json, sets the verify section ("passed" | "failed" with the report, timestamped)
/// and writes it back atomically.
void record_verify_result(const std::string& out_dir, bool passed, const nlohmann::json& report);

// ---- releases ----

struct HistoryEntry {
  std::string name;    ///< folder under RELEASES/
  std::string action;  ///< "release" | "rollback"
  std::string at;      ///< UTC ISO-8601
  std::string model_id, revision;
  std::string previous;  ///< what `current` pointed at before (empty if nothing)
};

/// The release folder `current` points at (its name), or none.
std::optional<std::string> current_release(const std::string& releases_dir);
/// RELEASES/history.json (empty if absent).
std::vector<HistoryEntry> read_history(const std::string& releases_dir);

/// Copies a verified `out_dir` into `releases_dir`/<model-id>-<short hash>-<UTC timestamp> and makes it
/// current. Throws hfx::Error("release", ...) — leaving `current` untouched — when the manifest is
/// missing, its verify status is not "passed", or a checksum differs (in OUT or in the copy). Returns the
/// release name. For crash tests, HFX_TEST_CRASH_AFTER=<step> aborts after that step: "checked",
/// "copied", "renamed", "linked", "switched", "history".
std::string release(const std::string& out_dir, const std::string& releases_dir);
/// Points `current` at the release before the current one in the history (release entries only) whose
/// folder still holds a passed manifest with matching checksums; appends a "rollback" entry. Throws
/// hfx::Error("release", ...) if there is none. Returns the name now current.
std::string rollback(const std::string& releases_dir);

}  // namespace hfx::artifact
