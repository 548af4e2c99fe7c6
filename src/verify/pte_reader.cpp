// The .pte reader/executor. Independent of the writer: its own header parsing, value model
// (pte_method_impl.h), memory arenas and kernel-name table (pte_kernels.cpp: ExecuTorch kernel name →
// op-table op + argument conversion).
#include "verify/pte_reader.h"
#include "verify/pte_method_impl.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>

#include <unistd.h>

#include <flatbuffers/flatbuffers.h>

#include "hfx/core/error.h"
#include "hfx/ops/op_schema.h"
#include "hfx_gen/program_generated.h"

namespace hfx::verify {

using pte_detail::Args;
using pte_detail::kernel_table;

namespace {

uint32_t le32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | static_cast<uint32_t>(p[3]) << 24; }
uint64_t le64(const uint8_t* p) { return le32(p) | static_cast<uint64_t>(le32(p + 4)) << 32; }
// [off, off + n) inside [0, limit), without the wraparound `off + n > limit` has for offsets from the file.
bool fits(uint64_t off, uint64_t n, uint64_t limit) { return off <= limit && n <= limit - off; }

// Planned memory a method may ask for: what the machine has, unless the caller set a smaller bound.
uint64_t planned_limit(uint64_t requested) {
  if (requested) return requested;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : UINT64_MAX;
}

// Bytes of a tensor of `sizes` (each >= 0), refusing products that overflow.
uint64_t tensor_bytes(const flatbuffers::Vector<int32_t>& sizes, size_t elem, size_t value) {
  uint64_t n = elem;
  for (int32_t x : sizes) {
    if (x < 0) HFX_THROW("pte", "expected non-negative sizes on tensor value {}, got {}", value, x);
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(x), &n))
      HFX_THROW("pte", "expected the sizes of tensor value {} to fit in 64-bit bytes, got an overflow",
                value);
  }
  return n;
}

DType dtype_of(fb::ScalarType s) {
  switch (s) {
    case fb::ScalarType::FLOAT:
      return DType::F32;
    case fb::ScalarType::HALF:
      return DType::F16;
    case fb::ScalarType::BFLOAT16:
      return DType::BF16;
    case fb::ScalarType::LONG:
      return DType::I64;
    case fb::ScalarType::INT:
      return DType::I32;
    case fb::ScalarType::CHAR:
      return DType::I8;
    case fb::ScalarType::BYTE:
      return DType::U8;
    case fb::ScalarType::BOOL:
      return DType::Bool;
    default:
      HFX_THROW("pte", "expected a scalar type hfx computes in, got {}", fb::EnumNameScalarType(s));
  }
}

}  // namespace

// ---------------------------------------------------------------- program
PteProgram::~PteProgram() = default;

std::shared_ptr<PteProgram> PteProgram::load_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) HFX_THROW("pte", "expected a readable .pte file, got '{}'", path);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return load_bytes(std::move(bytes));
}

std::shared_ptr<PteProgram> PteProgram::load_bytes(std::vector<uint8_t> bytes, uint64_t max_planned_bytes) {
  std::shared_ptr<PteProgram> p(new PteProgram());
  p->max_planned_bytes_ = max_planned_bytes;
  p->bytes_ = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  p->parse();
  return p;
}

namespace {
// flatbuffers 2.0.8's verifier checks a vector's length prefix for 4-byte alignment but not its elements:
// an int64/uint64/double vector at an offset that is 4 but not 8 mod 8 passes VerifyProgramBuffer, and
// every Get() on it is then a misaligned load (found by the `pte` fuzz target). ExecuTorch's writer, and
// hfx's, align these vectors; a file that does not is refused here, once, before anything reads them.
template <typename T>
void require_aligned(const flatbuffers::Vector<T>* v, const uint8_t* base, const char* what) {
  if (v && v->size() > 0 && (v->Data() - base) % alignof(T) != 0)
    HFX_THROW("pte",
              "expected {} of 8-byte elements at an 8-byte aligned offset, got offset {} "
              "(a corrupt program?)",
              what, static_cast<long long>(v->Data() - base));
}

void check_wide_vectors_aligned(const fb::Program* prog, const uint8_t* base) {
  if (prog->constant_segment())
    require_aligned(prog->constant_segment()->offsets(), base, "constant_segment.offsets");
  if (prog->mutable_data_segments())
    for (const auto* ms : *prog->mutable_data_segments())
      require_aligned(ms->offsets(), base, "mutable_data_segments.offsets");
  for (const auto* ep : *prog->execution_plan()) {
    require_aligned(ep->non_const_buffer_sizes(), base, "execution_plan.non_const_buffer_sizes");
    if (!ep->values()) continue;
    for (const auto* ev : *ep->values()) {
      if (const auto* l = ev->val_as_IntList()) require_aligned(l->items(), base, "IntList.items");
      if (const auto* l = ev->val_as_DoubleList()) require_aligned(l->items(), base, "DoubleList.items");
    }
  }
}
}  // namespace

void PteProgram::parse() {
  const auto& b = *bytes_;
  if (b.size() < 8) HFX_THROW("pte", "expected at least 8 bytes, got {}", b.size());
  if (std::memcmp(b.data() + 4, "ET", 2) != 0 || !std::isdigit(b[6]) || !std::isdigit(b[7]))
    HFX_THROW("pte", "expected the file identifier 'ET' + 2 digits at byte 4, got '{}'",
              std::string(b.begin() + 4, b.begin() + 8));
  header_.program_size = b.size();
  if (b.size() >= 40 && std::memcmp(b.data() + 8, "eh", 2) == 0) {
    uint32_t len = le32(b.data() + 12);
    if (len < 24) HFX_THROW("pte", "expected an extended header of at least 24 bytes, got {}", len);
    header_.extended = true;
    header_.program_size = le64(b.data() + 16);
    header_.segment_base_offset = le64(b.data() + 24);
    header_.segment_data_size = len >= 32 ? le64(b.data() + 32) : 0;
    if (header_.program_size > b.size())
      HFX_THROW("pte", "expected program size {} within the file of {} bytes", header_.program_size,
                b.size());
    if (header_.segment_base_offset &&
        !fits(header_.segment_base_offset, header_.segment_data_size, b.size()))
      HFX_THROW("pte", "expected segments [{}, +{}) within the file of {} bytes", header_.segment_base_offset,
                header_.segment_data_size, b.size());
  }
  flatbuffers::Verifier v(b.data(), header_.program_size);
  if (!fb::VerifyProgramBuffer(v))
    HFX_THROW("pte", "expected a Program flatbuffer that passes the verifier, got a corrupt one");
  const fb::Program* prog = fb::GetProgram(b.data());
  if (!prog->execution_plan()) HFX_THROW("pte", "expected execution plans, got none");
  check_wide_vectors_aligned(prog, b.data());
  if (prog->constant_buffer() && prog->constant_buffer()->size() > 0)
    HFX_THROW("pte",
              "expected constants in constant_segment, got {} deprecated inline constant_buffer entries",
              prog->constant_buffer()->size());
}

std::vector<std::string> PteProgram::method_names() const {
  std::vector<std::string> v;
  for (const auto* ep : *fb::GetProgram(bytes_->data())->execution_plan())
    v.push_back(ep->name() ? ep->name()->str() : "");
  return v;
}

std::vector<std::string> PteProgram::operator_names(const std::string& method) const {
  std::set<std::string> s;
  for (const auto* ep : *fb::GetProgram(bytes_->data())->execution_plan()) {
    if (!method.empty() && (!ep->name() || ep->name()->str() != method)) continue;
    if (!ep->operators()) continue;
    for (const auto* op : *ep->operators()) {
      std::string n = op->name() ? op->name()->str() : "";
      if (op->overload() && op->overload()->size()) n += "." + op->overload()->str();
      s.insert(n);
    }
  }
  return {s.begin(), s.end()};
}

// Planned memory: non_const_buffer_sizes[0] is reserved; memory id k uses entry k. Sizes come from the
// file: their sum is bounded before anything is allocated.
void PteMethod::Impl::allocate_arenas() {
  if (!plan->non_const_buffer_sizes()) return;
  const uint64_t limit = planned_limit(prog->max_planned_bytes_);
  uint64_t total = 0;
  for (size_t k = 1; k < plan->non_const_buffer_sizes()->size(); k++) {
    const int64_t n = plan->non_const_buffer_sizes()->Get(static_cast<flatbuffers::uoffset_t>(k));
    if (n < 0 || !fits(total, static_cast<uint64_t>(n), limit))
      HFX_THROW("pte",
                "expected planned memory within {} bytes, got buffer {} of {} bytes after {} (a corrupt or "
                "hostile plan?)",
                limit, k, n, total);
    total += static_cast<uint64_t>(n);
  }
  for (size_t k = 1; k < plan->non_const_buffer_sizes()->size(); k++)
    arenas.push_back(Storage::allocate(
        static_cast<size_t>(plan->non_const_buffer_sizes()->Get(static_cast<flatbuffers::uoffset_t>(k)))));
}

PteMethod::Impl::Segments PteMethod::Impl::locate_segments() const {
  const auto& b = *prog->bytes_;
  const fb::Program* p = fb::GetProgram(b.data());
  Segments out;
  if (const auto* cs = p->constant_segment(); cs && cs->offsets() && cs->offsets()->size() > 0) {
    if (!p->segments() || cs->segment_index() >= p->segments()->size())
      HFX_THROW("pte", "expected constant_segment.segment_index < {} segments",
                p->segments() ? p->segments()->size() : 0);
    const auto* seg = p->segments()->Get(cs->segment_index());
    out.constant = b.data() + prog->header_.segment_base_offset + seg->offset();
    out.constant_size = seg->size();
    if (!fits(prog->header_.segment_base_offset, seg->offset(), b.size()) ||
        !fits(prog->header_.segment_base_offset + seg->offset(), out.constant_size, b.size()))
      HFX_THROW("pte", "expected the constant segment inside the file");
    out.constant_offsets = cs->offsets();
  }
  if (p->mutable_data_segments() && p->mutable_data_segments()->size() > 0) {
    const auto* ms = p->mutable_data_segments()->Get(0);
    if (!p->segments() || ms->segment_index() >= p->segments()->size())
      HFX_THROW("pte", "expected a valid mutable data segment index");
    const auto* seg = p->segments()->Get(ms->segment_index());
    if (!fits(prog->header_.segment_base_offset, seg->offset(), b.size()) ||
        !fits(prog->header_.segment_base_offset + seg->offset(), seg->size(), b.size()))
      HFX_THROW("pte", "expected the mutable data segment inside the file");
    out.mutable_data = b.data() + prog->header_.segment_base_offset + seg->offset();
    out.mutable_size = seg->size();
    out.mutable_offsets = ms->offsets();
  }
  return out;
}

// A tensor value: its bound shape, and where its bytes live (an arena of planned memory, with its initial
// state in the mutable segment, or the constant segment), every offset checked against its segment.
void PteMethod::Impl::read_tensor(size_t i, const fb::Tensor* t, const Segments& seg) {
  Slot& s = slots[i];
  if (!t->sizes() || !t->dim_order()) HFX_THROW("pte", "expected sizes and dim_order on tensor value {}", i);
  if (t->sizes()->size() != t->dim_order()->size())
    HFX_THROW("pte", "expected dim_order of rank {} on tensor value {}, got {}", t->sizes()->size(), i,
              t->dim_order()->size());
  for (flatbuffers::uoffset_t d = 0; d < t->dim_order()->size(); d++)
    if (t->dim_order()->Get(d) != d) HFX_THROW("pte", "expected contiguous dim_order on tensor value {}", i);
  if (t->storage_offset() != 0) HFX_THROW("pte", "expected storage_offset 0 on tensor value {}", i);
  if (t->shape_dynamism() == fb::TensorShapeDynamism::DYNAMIC_UNBOUND)
    HFX_THROW("pte",
              "expected a bounded tensor at value {}, got DYNAMIC_UNBOUND (the portable runtime refuses it)",
              i);
  s.dtype = dtype_of(t->scalar_type());
  for (int32_t x : *t->sizes()) s.bound.push_back(x);
  s.cur = s.bound;
  s.dynamic = t->shape_dynamism() == fb::TensorShapeDynamism::DYNAMIC_BOUND;
  size_t nbytes = tensor_bytes(*t->sizes(), dtype_size(s.dtype), i);
  s.capacity = nbytes;
  uint32_t dbi = t->data_buffer_idx();
  if (const auto* ai = t->allocation_info()) {
    uint32_t mid = ai->memory_id();
    if (mid < 1 || mid > arenas.size())
      HFX_THROW("pte", "expected memory_id in [1, {}] at value {}, got {}", arenas.size(), i, mid);
    uint64_t off = ai->memory_offset_low() | static_cast<uint64_t>(ai->memory_offset_high()) << 32;
    if (!fits(off, nbytes, arenas[mid - 1]->nbytes))
      HFX_THROW("pte", "expected value {} ([{}, +{}) in memory {}) inside its arena of {} bytes", i, off,
                nbytes, mid, arenas[mid - 1]->nbytes);
    s.ptr = static_cast<uint8_t*>(arenas[mid - 1]->data) + off;
    if (dbi > 0) {
      if (!seg.mutable_offsets || dbi >= seg.mutable_offsets->size())
        HFX_THROW("pte", "expected mutable data index {} within mutable_data_segments[0]", dbi);
      uint64_t mo = seg.mutable_offsets->Get(dbi);
      if (!fits(mo, nbytes, seg.mutable_size))
        HFX_THROW("pte", "expected the initial state of value {} inside the mutable segment", i);
      s.initial = seg.mutable_data + mo;
    }
  } else if (dbi > 0) {
    if (!seg.constant_offsets || dbi >= seg.constant_offsets->size())
      HFX_THROW("pte", "expected constant index {} within constant_segment.offsets", dbi);
    uint64_t co = seg.constant_offsets->Get(dbi);
    if (!fits(co, nbytes, seg.constant_size))
      HFX_THROW("pte", "expected constant {} ([{}, +{}) ) inside the constant segment of {} bytes", dbi, co,
                nbytes, seg.constant_size);
    s.ptr = const_cast<uint8_t*>(seg.constant + co);
    s.constant = true;
  }
}

// One EValue of the plan into its slot.
void PteMethod::Impl::read_value(size_t i, const Segments& seg) {
  const fb::EValue* ev = plan->values()->Get(static_cast<flatbuffers::uoffset_t>(i));
  Slot& s = slots[i];
  s.kind = ev->val_type();
  // The verifier accepts a union whose type is set and whose value is absent.
  if (s.kind != fb::KernelTypes::Null && !ev->val())
    HFX_THROW("pte", "expected a value for EValue {} of type {}, got none", i, static_cast<int>(s.kind));
  switch (s.kind) {
    case fb::KernelTypes::Null:
      break;
    case fb::KernelTypes::Int:
      s.i = ev->val_as_Int()->int_val();
      break;
    case fb::KernelTypes::Bool:
      s.b = ev->val_as_Bool()->bool_val();
      break;
    case fb::KernelTypes::Double:
      s.d = ev->val_as_Double()->double_val();
      break;
    case fb::KernelTypes::String:
      s.s = ev->val_as_String()->string_val() ? ev->val_as_String()->string_val()->str() : "";
      break;
    case fb::KernelTypes::IntList:
      if (!ev->val_as_IntList()->items()) HFX_THROW("pte", "expected items in IntList value {}", i);
      for (int64_t x : *ev->val_as_IntList()->items()) s.ints.push_back(x);
      break;
    case fb::KernelTypes::DoubleList:
      if (ev->val_as_DoubleList()->items())
        for (double x : *ev->val_as_DoubleList()->items()) s.doubles.push_back(x);
      break;
    case fb::KernelTypes::BoolList:
      if (ev->val_as_BoolList()->items())
        for (auto x : *ev->val_as_BoolList()->items()) s.bools.push_back(x != 0);
      break;
    case fb::KernelTypes::TensorList:
      if (!ev->val_as_TensorList()->items()) HFX_THROW("pte", "expected items in TensorList value {}", i);
      for (int32_t x : *ev->val_as_TensorList()->items()) s.refs.push_back(x);
      break;
    case fb::KernelTypes::OptionalTensorList:
      if (!ev->val_as_OptionalTensorList()->items())
        HFX_THROW("pte", "expected items in OptionalTensorList value {}", i);
      for (int32_t x : *ev->val_as_OptionalTensorList()->items()) s.refs.push_back(x);
      break;
    case fb::KernelTypes::Tensor:
      read_tensor(i, ev->val_as_Tensor(), seg);
      break;
    default:
      HFX_THROW("pte", "expected a known value kind at {}, got {}", i, static_cast<int>(s.kind));
  }
}

void PteMethod::Impl::init() {
  allocate_arenas();
  const Segments seg = locate_segments();
  const auto* values = plan->values();
  slots.resize(values ? values->size() : 0);
  for (size_t i = 0; i < slots.size(); i++) read_value(i, seg);
  if (plan->operators())
    for (const auto* op : *plan->operators()) {
      std::string n = op->name() ? op->name()->str() : "";
      if (op->overload() && op->overload()->size()) n += "." + op->overload()->str();
      op_names.push_back(n);
    }
  load_delegates();
  load_initial_state();
}

// Each delegate's payload (a segment, or inline data of the program) and the named data it may refer to.
void PteMethod::Impl::load_delegates() {
  if (!plan->delegates()) return;
  const auto& b = *prog->bytes_;
  const fb::Program* p = fb::GetProgram(b.data());
  auto segment = [&](uint32_t i) -> std::pair<const uint8_t*, size_t> {
    if (!p->segments() || i >= p->segments()->size())
      HFX_THROW("pte", "expected a segment index < {}, got {}", p->segments() ? p->segments()->size() : 0, i);
    const auto* seg = p->segments()->Get(i);
    const uint64_t base = prog->header_.segment_base_offset;
    if (!fits(base, seg->offset(), b.size()) || !fits(base + seg->offset(), seg->size(), b.size()))
      HFX_THROW("pte", "expected segment {} inside the file", i);
    return {b.data() + base + seg->offset(), seg->size()};
  };
  pte_detail::NamedData named = [&](const std::string& key) -> std::pair<const uint8_t*, size_t> {
    if (p->named_data())
      for (const auto* nd : *p->named_data())
        if (nd->key() && nd->key()->str() == key) return segment(nd->segment_index());
    HFX_THROW("pte", "expected named data '{}' in the program, got none by that key", key);
  };
  for (const auto* d : *plan->delegates()) {
    const std::string id = d->id() ? d->id()->str() : "";
    if (id != "XnnpackBackend")
      HFX_THROW("pte", "expected delegates of a backend the reader runs (XnnpackBackend), got '{}'", id);
    if (!d->processed()) HFX_THROW("pte", "expected processed data on delegate '{}'", id);
    std::pair<const uint8_t*, size_t> data;
    const uint32_t idx = d->processed()->index();
    if (d->processed()->location() == fb::DataLocation::SEGMENT) {
      data = segment(idx);
    } else {
      const auto* inl = p->backend_delegate_data();
      if (!inl || idx >= inl->size() || !inl->Get(idx)->data())
        HFX_THROW("pte", "expected inline delegate data {} in the program", idx);
      data = {inl->Get(idx)->data()->data(), inl->Get(idx)->data()->size()};
    }
    try {
      delegates.push_back(pte_detail::load_xnn_graph(data.first, data.second, named));
    } catch (const Error& e) {
      HFX_THROW("pte", "delegate {} of method '{}': {}", delegates.size(), name, e.what());
    }
  }
}

void PteMethod::Impl::exec(const fb::DelegateCall* dc) {
  const int d = dc->delegate_index();
  if (d < 0 || d >= static_cast<int>(delegates.size()))
    HFX_THROW("pte", "expected a delegate index < {}, got {}", delegates.size(), d);
  Args args;
  if (dc->args())
    for (int32_t a : *dc->args()) args.push_back(a);
  try {
    pte_detail::run_xnn_graph(*delegates[d], *this, args);
  } catch (const Error& e) {
    HFX_THROW("pte", "XnnpackBackend delegate {} in method '{}' failed: {}", d, name, e.what());
  }
}

void PteMethod::Impl::load_initial_state() {
  for (Slot& s : slots)
    if (s.kind == fb::KernelTypes::Tensor && s.initial) std::memcpy(s.ptr, s.initial, s.capacity);
}

void PteMethod::Impl::exec(const fb::KernelCall* kc) {
  int op = kc->op_index();
  if (op < 0 || op >= static_cast<int>(op_names.size()))
    HFX_THROW("pte", "expected an operator index < {}, got {}", op_names.size(), op);
  const std::string& n = op_names[op];
  const auto& t = kernel_table();
  auto it = t.find(n);
  if (it == t.end()) HFX_THROW("pte", "expected a kernel the reader maps to the op table, got '{}'", n);
  Args args;
  if (kc->args())
    for (int32_t a : *kc->args()) args.push_back(a);
  if (args.size() != it->second.nargs)
    HFX_THROW("pte", "expected {} arguments (schema + return) for {}, got {}", it->second.nargs, n,
              args.size());
  try {
    it->second.fn(*this, args);
  } catch (const Error& e) {
    HFX_THROW("pte", "{} in method '{}' failed: {}", n, name, e.what());
  }
}

PteMethod::PteMethod(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PteMethod::~PteMethod() = default;

PteMethod& PteProgram::method(const std::string& name) {
  if (auto it = methods_.find(name); it != methods_.end()) return *it->second;
  const fb::Program* p = fb::GetProgram(bytes_->data());
  for (const auto* ep : *p->execution_plan()) {
    if (!ep->name() || ep->name()->str() != name) continue;
    auto impl = std::make_unique<PteMethod::Impl>();
    impl->prog = this;
    impl->plan = ep;
    impl->name = name;
    impl->init();
    auto m = std::unique_ptr<PteMethod>(new PteMethod(std::move(impl)));
    return *(methods_[name] = std::move(m));
  }
  std::string known;
  for (const auto& n : method_names()) known += (known.empty() ? "" : ", ") + n;
  HFX_THROW("pte", "expected a method among [{}], got '{}'", known, name);
}

int PteMethod::num_inputs() const {
  return impl_->plan->inputs() ? static_cast<int>(impl_->plan->inputs()->size()) : 0;
}

int PteMethod::num_instructions() const {
  int n = 0;
  if (impl_->plan->chains())
    for (const auto* c : *impl_->plan->chains())
      n += c->instructions() ? static_cast<int>(c->instructions()->size()) : 0;
  return n;
}

int PteMethod::num_delegate_calls() const {
  int n = 0;
  if (!impl_->plan->chains()) return 0;
  for (const auto* c : *impl_->plan->chains())
    if (c->instructions())
      for (const auto* i : *c->instructions())
        n += i->instr_args_type() == fb::InstructionArguments::DelegateCall;
  return n;
}

std::vector<std::string> PteMethod::delegate_backends() const {
  std::vector<std::string> v;
  if (impl_->plan->delegates())
    for (const auto* d : *impl_->plan->delegates()) v.push_back(d->id() ? d->id()->str() : "");
  return v;
}

int64_t PteMethod::planned_bytes() const {
  int64_t n = 0;
  for (const auto& a : impl_->arenas) n += static_cast<int64_t>(a->nbytes);
  return n;
}

Shape PteMethod::input_bound(int i) const { return impl_->at(impl_->plan->inputs()->Get(i)).bound; }

void PteMethod::reset() { impl_->load_initial_state(); }

namespace {

// Every instruction of every chain; an error of a writer's contract check names its guard (the
// instruction's stacktrace frame "hfx.contract").
void run_chains(PteMethod::Impl& m) {
  for (const auto* chain : *m.plan->chains()) {
    if (!chain->instructions()) continue;
    for (flatbuffers::uoffset_t i = 0; i < chain->instructions()->size(); i++) {
      const auto* ins_ = chain->instructions()->Get(i);
      const auto kind = ins_->instr_args_type();
      if (kind != fb::InstructionArguments::KernelCall && kind != fb::InstructionArguments::DelegateCall)
        HFX_THROW("pte", "expected only kernel and delegate calls in '{}', got {}", m.name,
                  fb::EnumNameInstructionArguments(kind));
      try {
        if (kind == fb::InstructionArguments::DelegateCall)
          m.exec(ins_->instr_args_as_DelegateCall());
        else
          m.exec(ins_->instr_args_as_KernelCall());
      } catch (const Error& e) {
        // A contract check of the writer names its guard in the instruction's stacktrace frame.
        const auto* st = chain->stacktrace();
        const auto* fl = st && i < st->size() ? st->Get(i) : nullptr;
        const auto* fr = fl && fl->items() && fl->items()->size() > 0 ? fl->items()->Get(0) : nullptr;
        if (fr && fr->name() && fr->name()->str() == "hfx.contract" && fr->context())
          HFX_THROW(
              "pte",
              "expected a call inside the contract of method '{}' ({} from {}:{}), got sizes outside it: {}",
              m.name, fr->context()->str(), fr->filename() ? fr->filename()->str() : "?", fr->lineno(),
              e.what());
        throw;
      }
    }
  }
}

// The method's outputs: tensors cloned out of the arenas, scalars as they are.
std::vector<PteOutput> read_outputs(PteMethod::Impl& m) {
  std::vector<PteOutput> out;
  if (m.plan->outputs())
    for (int32_t idx : *m.plan->outputs()) {
      Slot& s = m.at(idx);
      switch (s.kind) {
        case fb::KernelTypes::Tensor:
          out.emplace_back(m.tensor(idx).clone());
          break;
        case fb::KernelTypes::Int:
          out.emplace_back(s.i);
          break;
        case fb::KernelTypes::Bool:
          out.emplace_back(s.b);
          break;
        case fb::KernelTypes::Double:
          out.emplace_back(s.d);
          break;
        default:
          HFX_THROW("pte", "expected a tensor or scalar output at value {}, got {}", idx,
                    fb::EnumNameKernelTypes(s.kind));
      }
    }
  return out;
}

}  // namespace

std::vector<PteOutput> PteMethod::run(const std::vector<Tensor>& inputs) {
  Impl& m = *impl_;
  const auto* ins = m.plan->inputs();
  size_t n_in = ins ? ins->size() : 0;
  if (inputs.size() != n_in)
    HFX_THROW("pte", "expected {} inputs for method '{}', got {}", n_in, m.name, inputs.size());
  std::vector<std::shared_ptr<Storage>> keep;  // inputs without planned memory point at caller data
  for (size_t i = 0; i < n_in; i++) {
    int idx = ins->Get(static_cast<flatbuffers::uoffset_t>(i));
    Slot& s = m.at(idx);
    const Tensor& x = inputs[i];
    if (s.kind != fb::KernelTypes::Tensor) HFX_THROW("pte", "expected tensor input {} of '{}'", i, m.name);
    if (x.dtype() != s.dtype)
      HFX_THROW("pte", "expected input {} of '{}' to be {}, got {}", i, m.name, dtype_name(s.dtype),
                dtype_name(x.dtype()));
    // The program's bound is the method's contract: ExecuTorch's resize refuses a larger input.
    bool within = x.dim() == static_cast<int64_t>(s.bound.size());
    for (size_t d = 0; within && d < s.bound.size(); d++)
      within = s.dynamic ? x.shape()[d] <= s.bound[d] : x.shape()[d] == s.bound[d];
    if (!within)
      HFX_THROW("pte", "expected input {} of '{}' within its {} bound {} (the method's contract), got {}", i,
                m.name, s.dynamic ? "dynamic" : "static", shape_to_string(s.bound),
                shape_to_string(x.shape()));
    if (s.ptr) {
      m.write(idx, x);
    } else {
      Tensor c = x.contiguous();
      keep.push_back(c.storage());
      s.ptr = static_cast<uint8_t*>(c.raw());
      s.capacity = c.nbytes();
      s.cur = c.shape();
    }
  }
  run_chains(m);
  return read_outputs(m);
}

}  // namespace hfx::verify
