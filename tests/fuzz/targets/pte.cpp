// .pte (ExecuTorch flatbuffer + segments) through verify's reader: header, program verification, every
// method's plan (arena, values, instructions, operators). Planned memory is bounded at 256 MiB (verify bounds
// it by the machine's memory), below libFuzzer's 2 GiB allocation limit.
#include "fuzz/fuzz_support.h"
#include "verify/pte_reader.h"

void hfx_fuzz_pte(const uint8_t* data, size_t size) {
  hfx::fuzz::refused_or_read([&] {
    auto prog = hfx::verify::PteProgram::load_bytes(std::vector<uint8_t>(data, data + size), 256ull << 20);
    (void)prog->operator_names();
    for (const auto& name : prog->method_names()) {
      auto& m = prog->method(name);
      (void)m.num_instructions();
      (void)m.planned_bytes();
      for (int i = 0; i < m.num_inputs(); i++) (void)m.input_bound(i);
    }
  });
}
