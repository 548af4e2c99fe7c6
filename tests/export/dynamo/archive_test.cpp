// Dynamo backend without PyTorch: the zip container (stored, one top folder, 64-byte aligned data,
// CRC), the torch.save sample-input file, and for every architecture the prefill/decode .pt2
// archives: structure, every JSON field against the kept schema, weights round trip, treespecs and
// range constraints parsed back.
#include <gtest/gtest.h>
#include <zip.h>

#include <cstring>
#include <set>

#include "export/dynamo/dynamo_exporter.h"
#include "export/dynamo/dynamo_support.h"
#include "export/dynamo/program.h"
#include "export/dynamo/pt2_archive.h"
#include "export/dynamo/torch_save.h"
#include "models/model_test_util.h"

namespace hfx::dynamo {
namespace {

using namespace testing;
namespace fs = std::filesystem;

TEST(DynamoZip, Crc32KnownValue) {
  const char* s = "123456789";
  EXPECT_EQ(io::crc32_update(0, s, 9), 0xCBF43926u);
  EXPECT_EQ(io::crc32_update(io::crc32_update(0, s, 4), s + 4, 5), 0xCBF43926u);
}

TEST(DynamoZip, StoredAlignedOneFolderAndReadableByLibzip) {
  std::string bytes;
  {
    io::AlignedZipWriter z(io::memory_sink(&bytes), "pkg");
    z.add("a", std::string("x"));
    z.add("empty", std::string());
    std::string big(100003, 'q');
    z.begin("data/weights/weight_0", big.size());
    z.append(big.data(), 5);
    z.append(big.data() + 5, big.size() - 5);
    z.end();
    z.add("odd/name.json", std::string("{\"k\": 1}"));
    EXPECT_THROW(z.add("a", std::string("dup")), Error);
    z.finish();
  }
  auto recs = io::read_zip_index(bytes);
  ASSERT_EQ(recs.size(), 4u);
  for (const auto& r : recs) {
    EXPECT_EQ(r.name.substr(0, 4), "pkg/") << r.name;
    EXPECT_EQ(r.method, 0) << r.name;
    EXPECT_EQ(r.size, r.compressed_size);
    EXPECT_EQ(r.data_offset % 64, 0u) << r.name;
    EXPECT_EQ(io::crc32_update(0, bytes.data() + r.data_offset, r.size), r.crc) << r.name;
  }
  // An independent reader (libzip) checks the CRCs and the directory.
  zip_error_t ze;
  zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &ze);
  zip_t* za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze);
  ASSERT_NE(za, nullptr);
  EXPECT_EQ(zip_get_num_entries(za, 0), 4);
  zip_file_t* f = zip_fopen(za, "pkg/data/weights/weight_0", 0);
  ASSERT_NE(f, nullptr);
  std::string got(100003, '\0');
  EXPECT_EQ(zip_fread(f, got.data(), got.size()), 100003);
  EXPECT_EQ(got, std::string(100003, 'q'));
  zip_fclose(f);
  zip_close(za);
}

TEST(DynamoZip, StreamedRecordMustMatchDeclaredSize) {
  std::string bytes;
  io::AlignedZipWriter z(io::memory_sink(&bytes), "pkg");
  z.begin("w", 4);
  z.append("ab", 2);
  EXPECT_THROW(z.end(), Error);
}

TEST(DynamoTorchSave, SampleInputsRoundTrip) {
  Tensor ids = Tensor::from_ints({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor k = Tensor::from_floats({1, 2, 2}, {0.5f, -1.f, 2.f, 3.25f});
  PyObj o = PyObj::tuple(
      {PyObj::tuple({}), PyObj::dict({{"input_ids", PyObj::tensor(ids)},
                                      {"past_key_values",
                                       PyObj::list({PyObj::tuple({PyObj::tensor(k), PyObj::tensor(k)})})}})});
  std::string bytes = torch_save(o);
  auto recs = io::read_zip_index(bytes);
  std::set<std::string> names;
  for (const auto& r : recs) {
    names.insert(r.name);
    EXPECT_EQ(r.data_offset % 64, 0u);
  }
  EXPECT_TRUE(names.count("archive/data.pkl") && names.count("archive/version") &&
              names.count("archive/byteorder") && names.count("archive/data/0") &&
              names.count("archive/data/2"));
  PyObj back = torch_load(bytes);
  ASSERT_EQ(back.kind, PyObj::Kind::Tuple);
  ASSERT_EQ(back.items.size(), 2u);
  const auto& kw = back.items[1].entries;
  ASSERT_EQ(kw.size(), 2u);
  EXPECT_EQ(kw[0].first, "input_ids");
  EXPECT_EQ(kw[0].second.t.to_ints(), ids.to_ints());
  EXPECT_EQ(kw[1].second.items[0].items[1].t.to_floats(), k.to_floats());
}

TEST(DynamoProgram, TreespecStringsAsTorchWritesThem) {
  EXPECT_EQ(
      output_treespec({"logits"}),
      R"([1, {"type": "builtins.dict", "context": "[\"logits\"]", "children_spec": [{"type": null, "context": null, "children_spec": []}]}])");
  std::string in = input_treespec({"input_ids", "past_key_values.0.key", "past_key_values.0.value"});
  auto j = json::parse(in);
  EXPECT_EQ(j[0], 1);
  EXPECT_EQ(j[1]["type"], "builtins.tuple");
  EXPECT_EQ(j[1]["children_spec"][0]["children_spec"].size(), 0u);  // no positional args
  const auto& kw = j[1]["children_spec"][1];
  EXPECT_EQ(json::parse(kw["context"].get<std::string>()), json({"input_ids", "past_key_values"}));
  EXPECT_EQ(kw["children_spec"][1]["type"], "builtins.list");
  EXPECT_EQ(kw["children_spec"][1]["children_spec"][0]["type"], "builtins.tuple");
}

TEST(DynamoProgram, FxNamesAreIdentifiers) {
  EXPECT_EQ(fx_name("model.layers.0.self_attn.q_proj"), "model_layers_0_self_attn_q_proj");
  EXPECT_EQ(fx_name("0abc"), "_0abc");
  EXPECT_EQ(fx_name("input"), "input_1");
}

// ---------------------------------------------------------------- per architecture

// Counts leaves of a serialized treespec.
int count_leaves(const json& spec) {
  if (spec["type"].is_null()) return 1;
  int n = 0;
  for (const auto& c : spec["children_spec"]) n += count_leaves(c);
  return n;
}

void collect_symbols(const std::string& expr, std::set<std::string>& out) {
  size_t p = 0;
  while ((p = expr.find("Symbol('", p)) != std::string::npos) {
    size_t b = p + 8, e = expr.find('\'', b);
    out.insert(expr.substr(b, e - b));
    p = e;
  }
}

// The checks every written archive passes: one stored, 64-byte aligned top folder with valid CRCs, every
// JSON field against the kept schema, parameters lifted under their HF names with bytes equal to the
// checkpoint's, ATen/sym node targets, treespecs that parse back and match the flat signature, a range
// constraint for every symbol, sample inputs that parse back. What a caller checks next comes back in `f`.
struct ArchiveFacts {
  json kw_keys, out_keys, symbols, range_constraints;
};
void check_archive(const Model& model, const Archive& ar, const std::string& component,
                   const SchemaChecker& checker, ArchiveFacts& f) {
  // ---- structure
  EXPECT_EQ(ar.root, component);
  for (const auto& [name, rec] : ar.records) {
    EXPECT_EQ(rec.method, 0) << name;
    EXPECT_EQ(rec.data_offset % 64, 0u) << name;
    EXPECT_EQ(io::crc32_update(0, ar.bytes.data() + rec.data_offset, rec.size), rec.crc) << name;
  }
  std::set<std::string> roots;
  for (const auto& r2 : io::read_zip_index(ar.bytes)) roots.insert(r2.name.substr(0, r2.name.find('/')));
  EXPECT_EQ(roots.size(), 1u);
  EXPECT_EQ(ar.read("archive_format"), "pt2");
  EXPECT_EQ(ar.read("archive_version"), "0");
  EXPECT_EQ(ar.read("byteorder"), "little");
  EXPECT_EQ(ar.read(".data/version"), "6\n");
  ASSERT_TRUE(ar.has("models/model.json"));
  ASSERT_TRUE(ar.has(weights_config_path("model")));
  ASSERT_TRUE(ar.has(constants_config_path("model")));
  ASSERT_TRUE(ar.has(sample_inputs_path("model")));

  // ---- every JSON field against the kept schema
  json ep = ar.read_json("models/model.json");
  std::vector<std::string> errs;
  checker.check(ep, "ExportedProgram", "ExportedProgram", errs);
  json wcfg = ar.read_json(weights_config_path("model"));
  checker.check(wcfg, "PayloadConfig", "weights_config", errs);
  checker.check(ar.read_json(constants_config_path("model")), "PayloadConfig", "constants_config", errs);
  for (size_t i = 0; i < std::min<size_t>(errs.size(), 20); i++) ADD_FAILURE() << errs[i];
  EXPECT_EQ(ep["schema_version"]["major"], 8);

  // ---- signature: parameters lifted with their HF names, then user inputs
  const auto& specs = ep["graph_module"]["signature"]["input_specs"];
  const auto& graph = ep["graph_module"]["graph"];
  ASSERT_EQ(specs.size(), graph["inputs"].size());
  std::set<std::string> param_names;
  size_t users = 0;
  bool user_seen = false;
  for (size_t i = 0; i < specs.size(); i++) {
    if (specs[i].contains("parameter")) {
      EXPECT_FALSE(user_seen) << "parameters come before user inputs";
      param_names.insert(specs[i]["parameter"]["parameter_name"].get<std::string>());
      EXPECT_EQ(specs[i]["parameter"]["arg"]["name"], graph["inputs"][i]["as_tensor"]["name"]);
    } else if (specs[i].contains("user_input")) {
      user_seen = true;
      users++;
    }
  }
  for (const auto& name : param_names) EXPECT_TRUE(model.weights().has(name)) << name;

  // ---- node targets are real ATen overloads or sym ops
  for (const auto& n : graph["nodes"]) {
    std::string t = n["target"];
    EXPECT_TRUE(t.rfind("torch.ops.aten.", 0) == 0 || t.rfind("_operator.", 0) == 0 ||
                t.rfind("torch.sym_", 0) == 0)
        << t;
    for (const auto& in : n["inputs"]) EXPECT_FALSE(in["name"].get<std::string>().empty()) << t;
  }

  // ---- weights round trip: raw little-endian bytes equal the checkpoint's
  ASSERT_EQ(wcfg["config"].size(), param_names.size());
  for (auto& [fqn, meta] : wcfg["config"].items()) {
    Tensor want = model.weights().get(fqn).contiguous();
    std::string raw = ar.read("data/weights/" + meta["path_name"].get<std::string>());
    ASSERT_EQ(raw.size(), want.nbytes()) << fqn;
    EXPECT_EQ(std::memcmp(raw.data(), want.raw(), raw.size()), 0) << fqn;
    EXPECT_TRUE(meta["is_param"].get<bool>());
    EXPECT_FALSE(meta["use_pickle"].get<bool>());
    json sizes = json::array();
    for (int64_t d : want.shape()) sizes.push_back(json{{"as_int", d}});
    EXPECT_EQ(meta["tensor_meta"]["sizes"], sizes) << fqn;
  }

  // ---- treespecs parse back and match the flat signature
  const auto& root = ep["graph_module"]["module_call_graph"][0];
  EXPECT_EQ(root["fqn"], "");
  json in_spec = json::parse(root["signature"]["in_spec"].get<std::string>());
  json out_spec = json::parse(root["signature"]["out_spec"].get<std::string>());
  EXPECT_EQ(in_spec[0], 1);
  EXPECT_EQ(count_leaves(in_spec[1]), static_cast<int>(users));
  EXPECT_EQ(count_leaves(out_spec[1]), static_cast<int>(graph["outputs"].size()));
  EXPECT_EQ(root["signature"]["inputs"].size(), users);
  json kw_keys = json::parse(in_spec[1]["children_spec"][1]["context"].get<std::string>());
  EXPECT_EQ(kw_keys, root["signature"]["forward_arg_names"]);
  json out_keys = json::parse(out_spec[1]["context"].get<std::string>());

  // ---- range constraints: every symbol used anywhere has one, matching the capture's Dims
  std::set<std::string> used;
  for (auto& [name, tv] : graph["tensor_values"].items())
    for (const auto& d : tv["sizes"])
      if (d.contains("as_expr")) collect_symbols(d["as_expr"]["expr_str"], used);
  for (auto& [name, sv] : graph["sym_int_values"].items())
    if (sv.contains("as_expr")) collect_symbols(sv["as_expr"]["expr_str"], used);
  const auto& rc = ep["range_constraints"];
  for (const auto& s : used) EXPECT_TRUE(rc.contains(s)) << s;
  EXPECT_FALSE(used.empty());
  json custom = json::parse(ep["graph_module"]["metadata"]["custom"].get<std::string>());
  // ---- sample inputs parse back with the in_spec's structure
  PyObj samples = torch_load(ar.read(sample_inputs_path("model")));
  ASSERT_EQ(samples.kind, PyObj::Kind::Tuple);
  ASSERT_EQ(samples.items[1].entries.size(), kw_keys.size());
  f.kw_keys = kw_keys;
  f.out_keys = out_keys;
  f.symbols = custom["hfx"]["symbols"];
  f.range_constraints = rc;
}

class DynamoArch : public ::testing::TestWithParam<std::string> {};

TEST_P(DynamoArch, PrefillAndDecodeArchives) {
  const Architecture& a = architecture(GetParam());
  auto model = tiny_model(a);
  fs::path out = fs::temp_directory_path() / ("hfx_dynamo_" + GetParam() + "_" + std::to_string(::getpid()));
  fs::remove_all(out);
  DynamoConfig cfg;
  auto exporter = make_dynamo_exporter();
  ExportResult r = exporter->export_for_generation(*model, CaptureOptions{}, {{"*", &cfg}}, out.string());
  ASSERT_EQ(r.files.size(), 2u);
  SchemaChecker checker(kept_schema());

  for (const char* component : {"prefill", "decode"}) {
    SCOPED_TRACE(component);
    Archive ar = Archive::open((out / (std::string(component) + ".pt2")).string());
    ArchiveFacts f;
    check_archive(*model, ar, component, checker, f);
    if (HasFatalFailure()) return;
    EXPECT_EQ(std::string(component) == "decode", f.kw_keys.back() == "past_key_values");
    EXPECT_EQ(f.out_keys, json({"logits", "past_key_values"}));
    for (auto& [torch_sym, hfx_sym] : f.symbols.items()) {
      if (hfx_sym == "batch_size") {
        EXPECT_EQ(f.range_constraints[torch_sym], json({{"min_val", 1}, {"max_val", 64}}));
      }
      if (hfx_sym == "past_sequence_length") {
        EXPECT_EQ(f.range_constraints[torch_sym]["min_val"], 1);
      }  // decode: a past of >= 1
    }
  }
  if (!std::getenv("HFX_DYNAMO_KEEP"))
    fs::remove_all(out);  // HFX_DYNAMO_KEEP=1 keeps the archives to inspect
}

// Encoder-decoder families: one archive per single-call program (encoder_model, decoder_model,
// decoder_with_past_model; the merged decoder is an ONNX-only program), each passing the same checks,
// with the component's declared inputs and outputs as flat keyword leaves.
struct Seq2SeqCase {
  std::string name, arch, preset;
};
void PrintTo(const Seq2SeqCase& c, std::ostream* os) { *os << c.name; }
class DynamoSeq2Seq : public ::testing::TestWithParam<Seq2SeqCase> {};

TEST_P(DynamoSeq2Seq, ComponentArchives) {
  const Seq2SeqCase& c = GetParam();
  auto model = tiny_any_model(architecture(c.arch), c.preset);
  fs::path out = fs::temp_directory_path() / ("hfx_dynamo_s2s_" + c.name + "_" + std::to_string(::getpid()));
  fs::remove_all(out);
  DynamoConfig cfg;
  ExportResult r =
      make_dynamo_exporter()->export_for_generation(*model, CaptureOptions{}, {{"*", &cfg}}, out.string());
  ASSERT_EQ(r.files.size(), 3u);
  SchemaChecker checker(kept_schema());
  for (const char* program : {"encoder_model", "decoder_model", "decoder_with_past_model"}) {
    SCOPED_TRACE(program);
    Archive ar = Archive::open((out / (std::string(program) + ".pt2")).string());
    ArchiveFacts f;
    check_archive(*model, ar, program, checker, f);
    if (HasFatalFailure()) return;
    const bool encoder = std::string(program) == "encoder_model",
               past = std::string(program) == "decoder_with_past_model";
    ComponentDecl decl = model->component(encoder ? "encoder" : "decoder");
    json want_in = json::array(), want_out = json::array();
    for (const InputDecl& d : decl.inputs)  // each keyword a Python identifier (kwarg_name)
      if (!d.optional || past) want_in.push_back(kwarg_name(d.name));
    for (const std::string& o : decl.outputs) want_out.push_back(o);
    EXPECT_EQ(f.kw_keys, want_in);
    EXPECT_EQ(f.out_keys, want_out);
    for (auto& [torch_sym, hfx_sym] : f.symbols.items()) {
      if (hfx_sym == "batch_size") {
        EXPECT_EQ(f.range_constraints[torch_sym], json({{"min_val", 1}, {"max_val", 64}}));
      }
      if (hfx_sym.get<std::string>().rfind("past_", 0) == 0) {
        EXPECT_EQ(f.range_constraints[torch_sym]["min_val"], 1);
      }
    }
  }
  EXPECT_FALSE(fs::exists(out / "decoder_model_merged.pt2"));
  if (!std::getenv("HFX_DYNAMO_KEEP")) fs::remove_all(out);
}

INSTANTIATE_TEST_SUITE_P(EncoderDecoder, DynamoSeq2Seq,
                         ::testing::Values(Seq2SeqCase{"t5", "t5", "tiny"},
                                           Seq2SeqCase{"t5_gated", "t5", "tiny-gated"},
                                           Seq2SeqCase{"bart", "bart", "tiny"},
                                           Seq2SeqCase{"marian", "marian", "tiny"}),
                         [](const auto& i) { return i.param.name; });

// Decoders with a KV cache (the archive's past_key_values list of (key, value) tuples); the flat conv/ssm
// leaves of mamba and mamba2 are checked by tests/export/dynamo/interpreter_test.cpp (DynamoInterpretMamba).
std::vector<std::string> arch_names() {
  std::vector<std::string> v;
  for (const Architecture* a : all_architectures())
    if (hfx::test::is_decoder_only(*a) && hfx::test::has_kv_cache_only(*a)) v.push_back(a->model_type);
  return v;
}

INSTANTIATE_TEST_SUITE_P(All, DynamoArch, ::testing::ValuesIn(arch_names()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// Encoder-only models: one program `model` (model.pt2) with input_ids, attention_mask (token_type_ids for
// bert) → last_hidden_state or logits, checked like the decoders' archives: structure, every JSON field
// against the kept schema, HF parameter names, ATen targets, weights round trip, treespecs, ranges and
// sample inputs.
class DynamoEncoderArch : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(DynamoEncoderArch, ModelArchive) {
  const auto& [arch, head] = GetParam();
  auto model = tiny_encoder(arch, head);
  fs::path out = fs::temp_directory_path() /
                 ("hfx_dynamo_enc_" + encoder_case_name({GetParam(), 0}) + "_" + std::to_string(::getpid()));
  fs::remove_all(out);
  DynamoConfig cfg;
  ExportResult r =
      make_dynamo_exporter()->export_for_generation(*model, CaptureOptions{}, {{"*", &cfg}}, out.string());
  ASSERT_EQ(r.files.size(), 1u);
  SchemaChecker checker(kept_schema());
  ArchiveFacts f;
  check_archive(*model, Archive::open((out / "model.pt2").string()), "model", checker, f);
  json want_in = {"input_ids", "attention_mask"};
  if (test::tiny_takes_token_types(arch)) want_in.push_back("token_type_ids");
  EXPECT_EQ(f.kw_keys, want_in);
  EXPECT_EQ(f.out_keys, json({head == "base" ? "last_hidden_state" : "logits"}));
  for (auto& [torch_sym, hfx_sym] : f.symbols.items())
    if (hfx_sym == "batch_size") {
      EXPECT_EQ(f.range_constraints[torch_sym], json({{"min_val", 1}, {"max_val", 64}}));
    }
  fs::remove_all(out);
}

INSTANTIATE_TEST_SUITE_P(Encoders, DynamoEncoderArch, ::testing::ValuesIn(encoder_arch_heads()),
                         encoder_case_name);

}  // namespace
}  // namespace hfx::dynamo
