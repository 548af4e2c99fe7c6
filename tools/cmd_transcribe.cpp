// `hfx transcribe MODEL FILE.wav [--language xx] [--task transcribe|translate] [--max-new-tokens N]
// [--timestamps] [--engine auto|eager|ort] [--json]`: greedy Whisper transcription of a WAV / FLAC file from
// a checkpoint (eager) or an export folder (ONNX Runtime); see hfx/runtime/transcribe.h.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "hfx/core/error.h"
#include "hfx/runtime/transcribe.h"

namespace hfx::cli {

void register_transcribe(CLI::App& app) {
  struct Args {
    std::string model, file, engine = "auto";
    TranscribeOptions opts;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "transcribe", "Speech to text with Whisper from a checkpoint or an export folder (greedy)");
  cmd->footer(
      "Example:\n  hfx create-tiny whisper -o tiny-whisper\n  espeak-ng -w hello.wav 'hello world'\n"
      "  hfx transcribe tiny-whisper hello.wav --language en --json");
  cmd->add_option(
         "model", a->model,
         "checkpoint folder, export folder (onnx/encoder_model.onnx) or model id ORG/NAME[@REVISION]")
      ->required();
  cmd->add_option("file", a->file, "audio file: WAV or FLAC, any sample rate (resampled to the model's)")
      ->required();
  cmd->add_option("--language", a->opts.language,
                  "language code (en, de, ...) of a multilingual model (default: en), or auto: detected as "
                  "transformers' generate() does");
  cmd->add_option("--task", a->opts.task, "transcribe | translate (multilingual models)");
  cmd->add_option(
      "--max-new-tokens", a->opts.max_new_tokens,
      "at most N generated tokens (default: up to max_length); per 30-second window for longer audio");
  cmd->add_flag(
      "--timestamps", a->opts.timestamps,
      "segment timestamps (transformers' return_timestamps): one '[start --> end] text' line each; always "
      "on for audio longer than 30 s (transformers' long-form transcription)");
  cmd->add_flag("--single-call", a->opts.single_call,
                "one decoder call per clip (transformers' force_unique_generate_call, as Transformers.js): "
                "no re-decoding from the last timestamp; the raw tokens, EOS kept; clips up to 30 s");
  cmd->add_option("--engine", a->engine, "auto (export folder: ort, checkpoint: eager) | eager | ort");
  cmd->add_flag("--json", a->json, "print one JSON object (prompt, ids, text, finish reason)");
  cmd->callback([a] {
    Transcriber t = Transcriber::open(resolve_model(a->model), a->engine);
    TranscribeResult r = t.transcribe_file(a->file, a->opts);
    if (a->json) {
      nlohmann::json j = {{"model", a->model},
                          {"file", a->file},
                          {"engine", t.engine().name()},
                          {"prompt", r.prompt},
                          {"ids", r.ids},
                          {"text", r.text},
                          {"finish_reason", r.finish_reason},
                          {"language", r.language}};
      if (a->opts.timestamps || !r.segments.empty()) {
        j["segments"] = nlohmann::json::array();
        for (const auto& s : r.segments)
          j["segments"].push_back({{"start", s.start}, {"end", s.end}, {"ids", s.ids}, {"text", s.text}});
      }
      fmt::print("{}\n", j.dump());
      return;
    }
    if (!a->opts.timestamps) return fmt::print("{}\n", r.text);
    for (const auto& s : r.segments) fmt::print("[{:.2f} --> {:.2f}] {}\n", s.start, s.end, s.text);
  });
}

}  // namespace hfx::cli
