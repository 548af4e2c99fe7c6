// Runtime bindings: `hfx verify` as data, and generation (plain prompts, token ids, chat turns) over a
// checkpoint or an export folder, each without the GIL, streaming through Python callbacks.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "bindings.h"
#include "hfx/core/error.h"
#include "hfx/models/model.h"
#include "hfx/runtime/chat.h"
#include "hfx/runtime/generator.h"
#include "hfx/verify/verify.h"

namespace hfx::py {

namespace {

nb::dict verify_folder(const std::string& out, const std::string& reference, int64_t tokens, int threads,
                       bool write_manifest, nb::object progress,
                       std::shared_ptr<const Model> reference_model) {
  verify::VerifyOptions o;
  o.reference_model = std::move(reference_model);
  o.out_dir = out;
  o.reference = reference;
  o.tokens = tokens;
  o.threads = threads;
  o.write_manifest = write_manifest;
  o.quiet = true;
  CallbackGuard guard;
  if (!progress.is_none())
    o.on_check = [&](size_t done, const std::string& last) { guard.call([&] { progress(done, last); }); };
  std::optional<verify::VerifyReport> r;
  try {
    nb::gil_scoped_release release;
    r.emplace(verify::run_verify(o));
  } catch (const CallbackRaised&) {
    guard.rethrow();
  }
  return nb::cast<nb::dict>(to_python(r->json));
}

GenerationOptions options_from(const nb::dict& kw) {
  nlohmann::json j = from_python(kw, "the generation options");
  GenerationOptions o;
  static const std::vector<std::string> known = {"max_new_tokens", "greedy", "temperature",
                                                 "top_k",          "top_p",  "repetition_penalty",
                                                 "seed",           "stop",   "ignore_eos"};
  for (auto it = j.begin(); it != j.end(); ++it)
    HFX_CHECK(std::find(known.begin(), known.end(), it.key()) != known.end(), "generate",
              "expected generation options among {}, got '{}'", nlohmann::json(known).dump(), it.key());
  o.max_new_tokens = j.value("max_new_tokens", o.max_new_tokens);
  o.sampling.greedy = j.value("greedy", o.sampling.greedy);
  o.sampling.temperature = j.value("temperature", o.sampling.temperature);
  o.sampling.top_k = j.value("top_k", o.sampling.top_k);
  o.sampling.top_p = j.value("top_p", o.sampling.top_p);
  o.sampling.repetition_penalty = j.value("repetition_penalty", o.sampling.repetition_penalty);
  o.sampling.seed = j.value("seed", o.sampling.seed);
  o.stop = j.value("stop", o.stop);
  o.ignore_eos = j.value("ignore_eos", o.ignore_eos);
  return o;
}

nb::dict result_dict(const GenerationResult& r) {
  nlohmann::json j = {{"prompt_ids", r.prompt_ids},
                      {"ids", r.ids},
                      {"texts", r.texts},
                      {"finish_reasons", r.finish_reasons},
                      {"stats",
                       {{"prefill_s", r.stats.prefill_s},
                        {"decode_s", r.stats.decode_s},
                        {"prompt_tokens", r.stats.prompt_tokens},
                        {"decode_steps", r.stats.decode_steps},
                        {"new_tokens", r.stats.new_tokens}}}};
  return nb::cast<nb::dict>(to_python(j));
}

// hfx::Generator with an optional chat session; every call releases the GIL and streams through `on_token`.
class PyGenerator {
 public:
  PyGenerator(const std::string& path, const std::string& engine, int threads) : path_(path) {
    GeneratorConfig c;
    c.engine = engine;
    c.threads = threads;
    nb::gil_scoped_release release;
    gen_ = std::make_unique<Generator>(Generator::open(path, c));
  }
  std::string engine() const { return gen_->engine().name(); }

  nb::dict generate(const std::vector<std::string>& prompts, const nb::dict& kw, nb::object on_token) {
    return run(kw, on_token, [&](const GenerationOptions& o, const TokenCallback& cb) {
      return gen_->generate(prompts, o, cb);
    });
  }
  nb::dict generate_ids(const std::vector<std::vector<int64_t>>& prompts, const nb::dict& kw,
                        nb::object on_token) {
    return run(kw, on_token, [&](const GenerationOptions& o, const TokenCallback& cb) {
      return gen_->generate_ids(prompts, o, cb);
    });
  }
  /// One chat turn; the first starts the session (its system prompt), later ones keep the conversation.
  nb::dict chat(const std::string& message, const std::optional<std::string>& system, const nb::dict& kw,
                nb::object on_token) {
    if (!chat_) {
      nb::gil_scoped_release release;
      chat_ = std::make_unique<ChatSession>(*gen_, tok::ChatTemplate::from_dir(path_), system);
    }
    return run(kw, on_token, [&](const GenerationOptions& o, const TokenCallback& cb) {
      return chat_->send(message, o, cb);
    });
  }
  void reset_chat() { chat_.reset(); }

 private:
  template <typename Fn>
  nb::dict run(const nb::dict& kw, nb::object on_token, Fn&& fn) {
    GenerationOptions o = options_from(kw);
    CallbackGuard guard;
    TokenCallback cb;
    if (!on_token.is_none())
      cb = [&](const TokenEvent& e) { guard.call([&] { on_token(e.row, e.token, e.text, e.finished); }); };
    std::optional<GenerationResult> r;
    try {
      nb::gil_scoped_release release;
      r.emplace(fn(o, cb));
    } catch (const CallbackRaised&) {
      guard.rethrow();
    }
    return result_dict(*r);
  }

  std::string path_;
  std::unique_ptr<Generator> gen_;
  std::unique_ptr<ChatSession> chat_;
};

}  // namespace

void bind_runtime(nb::module_& m) {
  m.def(
      "verify",
      [](const std::string& out, const std::string& reference, int64_t tokens, int threads,
         bool write_manifest, nb::object progress) {
        return verify_folder(out, reference, tokens, threads, write_manifest, std::move(progress), nullptr);
      },
      nb::arg("out"), nb::arg("reference") = "", nb::arg("tokens") = 32, nb::arg("threads") = 2,
      nb::arg("write_manifest") = true, nb::arg("progress").none() = nb::none(),
      "Runs `hfx verify` over an export folder; returns the report (what verify.json holds).");
  m.def(
      "verify_live",
      [](const std::string& out, const nb::dict& model_config, const nb::dict& tensors, int64_t tokens,
         int threads, bool write_manifest, nb::object progress) {
        std::shared_ptr<const Model> ref = live_model(model_config, tensors);
        return verify_folder(out, "a live transformers model", tokens, threads, write_manifest,
                             std::move(progress), std::move(ref));
      },
      nb::arg("out"), nb::arg("model_config"), nb::arg("tensors"), nb::arg("tokens") = 32,
      nb::arg("threads") = 2, nb::arg("write_manifest") = true, nb::arg("progress").none() = nb::none(),
      "verify() against a model given as export_live takes it (its weights read in place) instead of a "
      "folder.");
  nb::class_<PyGenerator>(m, "Generator")
      .def(nb::init<const std::string&, const std::string&, int>(), nb::arg("path"),
           nb::arg("engine") = "auto", nb::arg("threads") = 0)
      .def_prop_ro("engine", &PyGenerator::engine)
      .def("generate", &PyGenerator::generate, nb::arg("prompts"), nb::arg("options"),
           nb::arg("on_token").none() = nb::none())
      .def("generate_ids", &PyGenerator::generate_ids, nb::arg("prompts"), nb::arg("options"),
           nb::arg("on_token").none() = nb::none())
      .def("chat", &PyGenerator::chat, nb::arg("message"), nb::arg("system").none(), nb::arg("options"),
           nb::arg("on_token").none() = nb::none())
      .def("reset_chat", &PyGenerator::reset_chat);
}

}  // namespace hfx::py
