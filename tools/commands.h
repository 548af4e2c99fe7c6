// tools/commands.h — the CLI's subcommands. Each lives in its own tools/cmd_*.cpp and is registered
// once in tools/main.cpp's table.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/io/hub.h"
#include "hfx/models/component.h"

namespace hfx::cli {
/// A misuse of the command line found by a command itself (flags that need each other, a missing
/// repeated option): printed like any error, but the exit status is 2, as for CLI11's parse errors.
struct UsageError : Error {
  using Error::Error;
};
/// A MODEL argument as a folder: an existing folder wins; otherwise `ORG/NAME[@REVISION]` is resolved
/// through the Hugging Face cache, downloading what is missing unless HF_HUB_OFFLINE=1 (hfx/io/hub.h),
/// with a download progress bar. A malformed id or a missing folder is a UsageError (exit 2); a failed
/// resolution is an hfx::Error("hub") (exit 1).
std::string resolve_model(const std::string& arg);
/// A model id `ORG/NAME[@REVISION]` through the Hugging Face cache, as resolve_model resolves one (same
/// download, progress bar and errors), with the commit it resolved to (`hfx sweep` pins plans to it).
hub::Snapshot resolve_model_id(const std::string& arg);
/// The export backends (onnx standard / ort, executorch portable / xnnpack, dynamo) for a model of this
/// structure and model_type: per backend its name, format, command, supported, and the artifacts with notes
/// or the reason it is refused (what `hfx inspect` prints; tools/cmd_inspect.cpp).
nlohmann::json backends_json(Structure structure, const std::string& model_type);
/// Adds a subcommand to `app`; its callback runs the command and throws hfx::Error on failure.
using Register = void (*)(CLI::App& app);
void register_ops(CLI::App& app);
void register_registries(CLI::App& app);
void register_export(CLI::App& app);
void register_generate(CLI::App& app);
void register_release(CLI::App& app);
void register_rollback(CLI::App& app);
void register_verify(CLI::App& app);
void register_create_tiny(CLI::App& app);
void register_embed(CLI::App& app);
void register_inspect(CLI::App& app);
void register_architectures(CLI::App& app);
void register_sweep(CLI::App& app);
void register_preprocess(CLI::App& app);
void register_transcribe(CLI::App& app);
}  // namespace hfx::cli
