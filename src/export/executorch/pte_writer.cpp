// The .pte writer: each method's emission (kernel calls through the lowering table of
// pte_lowering_table.cpp, symbolic sizes, guard checks, memory planning), the constant and mutable segments,
// flatbuffer serialization and the extended header. See pte_writer.h.
#include "export/executorch/pte_writer.h"
#include "export/executorch/method_emitter.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include <flatbuffers/flatbuffers.h>
#include <fmt/format.h>

#include "hfx/core/error.h"
#include "hfx_gen/program_generated.h"

namespace hfx::et {
namespace fb = executorch_flatbuffer;

namespace detail {

Plan MethodEmitter::emit() {
  // Mutable buffers: planned for the whole method, zeroed initial state; not method inputs.
  std::map<std::string, std::string> buffer_out;
  for (const auto& [in_name, out_name] : spec_.mutable_buffers) {
    Value* v = g_.find_input(in_name);
    if (!v)
      HFX_THROW("executorch", "expected mutable buffer '{}' to be a graph input of '{}', got none", in_name,
                spec_.name);
    if (!g_.find_output(out_name))
      HFX_THROW("executorch", "expected the new value of buffer '{}' as graph output '{}', got none", in_name,
                out_name);
    buffers_.insert(v);
    buffer_out[out_name] = in_name;
    EV e = tensor_ev(v->type, v->name, true);
    if (e.dynamic)
      HFX_THROW("executorch", "expected a static shape for mutable buffer '{}', got {}", in_name,
                v->type.str());
    e.data_buffer_idx = pools_.add_zeroed(static_cast<size_t>(e.nbytes));
    int idx = add(e);
    tensors_[v] = idx;
    pinned_.insert(idx);
  }
  for (Value* v : g_.inputs()) {
    if (buffers_.count(v)) continue;
    int idx = add(tensor_ev(v->type, v->name, true));
    tensors_[v] = idx;
    pinned_.insert(idx);
    plan_.inputs.push_back(idx);
    for (size_t a = 0; a < v->type.shape.size(); a++) {
      const Sym& d = v->type.shape[a];
      if (d.kind() == Sym::Kind::Symbol && !sources_.count(d.name()))
        sources_[d.name()] = {idx, static_cast<int>(a)};
    }
  }
  emit_guard_checks();
  lower_nodes();
  for (Value* v : g_.outputs()) {
    if (auto it = buffer_out.find(v->name); it != buffer_out.end()) {
      const Value* buf = g_.find_input(it->second);
      if (T(v) != T(buf))
        HFX_THROW(
            "executorch",
            "expected output '{}' to be the in-place update of buffer '{}' (aten.index_copy on it), got {}",
            v->name, it->second, v->producer ? v->producer->op : "no producer");
      continue;
    }
    int idx = T(v);
    pinned_.insert(idx);
    plan_.outputs.push_back(idx);
  }
  // Every user of a buffer other than its in-place update must come before that update.
  for (const Value* b : buffers_) {
    bool written = false;
    for (const auto& n : g_.nodes()) {
      bool uses = std::find(n->inputs.begin(), n->inputs.end(), b) != n->inputs.end();
      if (!uses) continue;
      if (written)
        HFX_THROW("executorch",
                  "expected every read of buffer '{}' before its in-place update, got {} after it", b->name,
                  n->name);
      if (n->op == "aten.index_copy" && n->inputs[0] == b) written = true;
    }
  }
  plan_memory();
  return std::move(plan_);
}

// Every node in graph order: a portable kernel call each, or — with the XNNPACK delegate — one delegate
// call at the first node of each partition (its inputs are all computed by then: a partition is a run of
// consecutive nodes) and nothing for the rest of it.
void MethodEmitter::lower_nodes() {
  std::map<const Node*, size_t> first;
  std::set<const Node*> taken;
  std::vector<xnn::Partition> parts;
  if (opt_.delegate == "xnnpack") parts = xnn::partition(g_);
  for (size_t i = 0; i < parts.size(); i++) {
    first[parts[i].nodes.front()] = i;
    taken.insert(parts[i].nodes.begin(), parts[i].nodes.end());
  }
  for (const auto& n : g_.nodes()) {
    const double f = xnn::node_flops(*n, env_);
    plan_.nodes++;
    plan_.flops += f;
    if (!taken.count(n.get())) {
      if (f > 0) plan_.portable_flops[n->op] += f;
      lower(*n);
      continue;
    }
    plan_.delegated_nodes++;
    plan_.delegated_flops += f;
    if (auto it = first.find(n.get()); it != first.end()) emit_delegate(parts[it->second]);
  }
}

// One XnnpackBackend call: arguments are the partition's inputs then its outputs (the payload's external
// ids 0..n-1, in that order), each a tensor value of the method; the payload's constants go to named data.
void MethodEmitter::emit_delegate(const xnn::Partition& p) {
  std::vector<int32_t> args;
  for (const Value* v : p.inputs) args.push_back(T(v));
  for (const Value* v : p.outputs) args.push_back(T(v));
  auto bytes = xnn::serialize(
      p, [&](const Value* v) { return tensor_ev(v->type, v->name, false).sizes; },
      [&](const Value* v) { return pools_.add_named(v); });
  plan_.delegates.push_back(pools_.add_payload(std::move(bytes)));
  Call c;
  c.delegate = static_cast<int>(plan_.delegates.size() - 1);
  c.args = std::move(args);
  plan_.calls.push_back(std::move(c));
}

// The capture's deferred guards (lower <= expr <= upper over input sizes), enforced the way ExecuTorch
// enforces dynamic bounds, since its runtime registers no assert kernel (its own exporter drops
// aten._assert_scalar): aten::full.out of size [expr - lower] into a bool tensor bounded at
// upper - lower. Outside the guard the kernel's resize fails (above the bound: NotSupported; negative:
// InvalidArgument) and the method stops before any node of the model ran. Each check's stacktrace
// frame names the guard, so a reader can say which contract the call broke.
void MethodEmitter::emit_guard_checks() {
  for (const Guard& gd : spec_.guards) {
    bool sourced = true;
    for (const std::string& name : gd.expr.free_symbols()) sourced = sourced && sources_.count(name);
    const SymRange r = env_.bounds(gd.expr);
    const int64_t lo = gd.lower > -SymRange::kInf ? gd.lower : r.min,
                  hi = gd.upper < SymRange::kInf ? gd.upper : r.max;
    if (!sourced || lo <= -SymRange::kInf || hi >= SymRange::kInf || hi - lo > INT32_MAX || hi < lo) {
      plan_.warnings.push_back(fmt::format(
          "[executorch] deferred guard '{}' ({}) not checked in method '{}': {}", gd.what, gd.where,
          spec_.name, sourced ? "its bounds do not fit a tensor size" : "a symbol has no input axis"));
      continue;
    }
    emit_check(gd.expr, lo, hi, gd.what, gd.where);
  }
  // ExecuTorch resizes a DYNAMIC_BOUND input when its element count fits the bound's, whatever its sizes:
  // an input with two dynamic dims ([batch, seq] bounded [64, 128]) takes [1, 129], and the method runs
  // past its contract until some kernel happens to refuse. Each symbol of such an input is checked against
  // its own range, as the guards are. The resize also takes any size down to 0, so a symbol whose range
  // starts above 0 (an empty prompt, an empty past where the contract says at least one position) is
  // checked on every input that has it (tests/interop/test_conformance.py's min - 1 probes).
  std::set<std::string> checked;
  for (const Value* v : g_.inputs()) {
    int dynamic = 0;
    for (const Sym& d : v->type.shape) dynamic += d.is_const() ? 0 : 1;
    if (buffers_.count(v) || dynamic == 0) continue;
    for (size_t a = 0; a < v->type.shape.size(); a++) {
      const Sym& d = v->type.shape[a];
      if (d.kind() != Sym::Kind::Symbol || checked.count(d.name())) continue;
      const SymRange r = env_.bounds(d);
      if (dynamic < 2 && r.min <= 0) continue;
      checked.insert(d.name());
      if (r.bounded() && r.min > -SymRange::kInf && r.max - r.min <= INT32_MAX)
        emit_check(d, r.min, r.max, fmt::format("input '{}' dim {} within its bound", v->name, a), "");
    }
  }
}

// One check instruction: aten::full.out of size [expr - lo] into a bool tensor bounded at hi - lo.
void MethodEmitter::emit_check(const Sym& expr, int64_t lo, int64_t hi, const std::string& what,
                               const std::string& where) {
  EV e = tensor_ev(TensorType{DType::Bool, {Sym(hi - lo)}}, "contract check", true);
  e.dynamic = true;
  const int out = add(e);
  call("aten::full", "out", {IL(std::vector<Sym>{expr - Sym(lo)}), I(0), out}, out);
  plan_.calls.back().check = fmt::format("{} in [{}, {}] ({})", expr.str(), lo, hi, what);
  plan_.calls.back().where = where;
}

// Greedy planning by size: each tensor takes the lowest aligned offset that does not overlap a tensor
// already placed whose lifetime (first..last instruction touching it) intersects its own.
void MethodEmitter::plan_memory() {
  const int n_calls = static_cast<int>(plan_.calls.size());
  std::vector<int> first(plan_.values.size(), INT32_MAX), last(plan_.values.size(), -1);
  auto touch = [&](int v, int at) {
    if (v < 0 || plan_.values[v].kind != fb::KernelTypes::Tensor) return;
    first[v] = std::min(first[v], at);
    last[v] = std::max(last[v], at);
  };
  for (int c = 0; c < n_calls; c++) {
    for (int a : plan_.calls[c].args) {
      if (a < 0) continue;
      const EV& e = plan_.values[a];
      touch(a, c);
      if (e.kind == fb::KernelTypes::TensorList || e.kind == fb::KernelTypes::OptionalTensorList)
        for (int r : e.refs) touch(r, c);
    }
  }
  struct Item {
    int v;
    int64_t size;
    int lo, hi;
  };
  std::vector<Item> items;
  for (size_t v = 0; v < plan_.values.size(); v++) {
    const EV& e = plan_.values[v];
    if (e.kind != fb::KernelTypes::Tensor || !e.planned) continue;
    int lo = first[v], hi = last[v];
    if (pinned_.count(static_cast<int>(v)) || hi < 0) lo = -1, hi = n_calls;
    items.push_back({static_cast<int>(v),
                     static_cast<int64_t>(align_up(static_cast<size_t>(e.nbytes), opt_.memory_alignment)), lo,
                     hi});
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.size > b.size; });
  std::vector<std::pair<int64_t, const Item*>> placed;  // offset, item
  int64_t total = 0;
  for (const Item& it : items) {
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const auto& [off, p] : placed)
      if (!(p->hi < it.lo || it.hi < p->lo)) busy.emplace_back(off, off + p->size);
    std::sort(busy.begin(), busy.end());
    int64_t off = 0;
    for (const auto& [b0, b1] : busy) {
      if (off + it.size <= b0) break;
      off = std::max(off, b1);
    }
    placed.emplace_back(off, &it);
    plan_.values[it.v].mem_offset = static_cast<uint64_t>(off);
    total = std::max(total, off + it.size);
  }
  plan_.non_const_buffer_sizes = {0, total};
}

}  // namespace detail

using namespace detail;

namespace {

// ---------------------------------------------------------------- serialization
flatbuffers::Offset<fb::EValue> pack(flatbuffers::FlatBufferBuilder& b, const EV& e) {
  flatbuffers::Offset<void> u;
  switch (e.kind) {
    case fb::KernelTypes::Null:
      u = fb::CreateNull(b).Union();
      break;
    case fb::KernelTypes::Int:
      u = fb::CreateInt(b, e.i).Union();
      break;
    case fb::KernelTypes::Bool:
      u = fb::CreateBool(b, e.b).Union();
      break;
    case fb::KernelTypes::Double:
      u = fb::CreateDouble(b, e.d).Union();
      break;
    case fb::KernelTypes::String:
      u = fb::CreateStringDirect(b, e.s.c_str()).Union();
      break;
    case fb::KernelTypes::IntList:
      u = fb::CreateIntListDirect(b, &e.ints).Union();
      break;
    case fb::KernelTypes::TensorList:
      u = fb::CreateTensorListDirect(b, &e.refs).Union();
      break;
    case fb::KernelTypes::OptionalTensorList:
      u = fb::CreateOptionalTensorListDirect(b, &e.refs).Union();
      break;
    case fb::KernelTypes::Tensor: {
      std::vector<uint8_t> dim_order(e.sizes.size());
      for (size_t i = 0; i < dim_order.size(); i++) dim_order[i] = static_cast<uint8_t>(i);
      flatbuffers::Offset<fb::AllocationDetails> alloc = 0;
      if (e.planned)
        alloc = fb::CreateAllocationDetails(b, 1, static_cast<uint32_t>(e.mem_offset & 0xffffffffu),
                                            static_cast<uint32_t>(e.mem_offset >> 32));
      u = fb::CreateTensorDirect(
              b, e.st, 0, &e.sizes, &dim_order, false, e.data_buffer_idx, alloc, 0,
              e.dynamic ? fb::TensorShapeDynamism::DYNAMIC_BOUND : fb::TensorShapeDynamism::STATIC)
              .Union();
      break;
    }
    default:
      HFX_THROW("executorch", "expected a value kind the writer packs, got {}", static_cast<int>(e.kind));
  }
  return fb::CreateEValue(b, e.kind, u);
}

// `payload_segment0`: the segment of payload 0 (Pools::payloads are consecutive segments).
flatbuffers::Offset<fb::ExecutionPlan> pack(flatbuffers::FlatBufferBuilder& b, const Plan& p,
                                            uint32_t payload_segment0) {
  std::vector<flatbuffers::Offset<fb::EValue>> values;
  for (const EV& e : p.values) values.push_back(pack(b, e));
  std::vector<flatbuffers::Offset<fb::Instruction>> instrs;
  for (const Call& c : p.calls)
    instrs.push_back(c.delegate >= 0
                         ? fb::CreateInstruction(b, fb::InstructionArguments::DelegateCall,
                                                 fb::CreateDelegateCallDirect(b, c.delegate, &c.args).Union())
                         : fb::CreateInstruction(b, fb::InstructionArguments::KernelCall,
                                                 fb::CreateKernelCallDirect(b, c.op, &c.args).Union()));
  // Contract checks carry a stacktrace frame (one FrameList per instruction, empty for the others).
  std::vector<flatbuffers::Offset<fb::FrameList>> frames;
  const bool checks =
      std::any_of(p.calls.begin(), p.calls.end(), [](const Call& c) { return !c.check.empty(); });
  for (const Call& c : p.calls) {
    std::vector<flatbuffers::Offset<fb::Frame>> items;
    if (!c.check.empty()) {
      const size_t colon = c.where.rfind(':');
      const std::string file = c.where.substr(0, colon);
      const int line = colon == std::string::npos ? 0 : std::atoi(c.where.c_str() + colon + 1);
      items.push_back(fb::CreateFrameDirect(b, file.c_str(), line, "hfx.contract", c.check.c_str()));
    }
    if (checks) frames.push_back(fb::CreateFrameListDirect(b, &items));
  }
  std::vector<flatbuffers::Offset<fb::Chain>> chains{
      fb::CreateChainDirect(b, &p.inputs, &p.outputs, &instrs, checks ? &frames : nullptr)};
  std::vector<flatbuffers::Offset<fb::Operator>> ops;
  for (const auto& [n, o] : p.operators) ops.push_back(fb::CreateOperatorDirect(b, n.c_str(), o.c_str()));
  std::vector<flatbuffers::Offset<fb::BackendDelegate>> delegates;
  for (uint32_t payload : p.delegates) {
    auto ref =
        fb::CreateBackendDelegateDataReference(b, fb::DataLocation::SEGMENT, payload_segment0 + payload);
    std::vector<flatbuffers::Offset<fb::CompileSpec>> no_specs;
    delegates.push_back(fb::CreateBackendDelegateDirect(b, "XnnpackBackend", ref, &no_specs));
  }
  auto meta = fb::CreateContainerMetadataDirect(b, "", "");
  return fb::CreateExecutionPlanDirect(b, p.name.c_str(), meta, &values, &p.inputs, &p.outputs, &chains, &ops,
                                       &delegates, &p.non_const_buffer_sizes);
}

Plan const_plan(const PteConstMethod& m) {
  Plan p;
  p.name = m.name;
  for (const PteConstant& c : m.values) {
    EV e;
    if (auto* i = std::get_if<int64_t>(&c))
      e.kind = fb::KernelTypes::Int, e.i = *i;
    else if (auto* b = std::get_if<bool>(&c))
      e.kind = fb::KernelTypes::Bool, e.b = *b;
    else
      e.kind = fb::KernelTypes::Double, e.d = std::get<double>(c);
    p.values.push_back(e);
    p.outputs.push_back(static_cast<int32_t>(p.values.size() - 1));
  }
  return p;
}

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

std::vector<std::string> pte_lowered_ops() {
  std::vector<std::string> v;
  for (const auto& [k, _] : lowering_table()) v.push_back(k);
  return v;
}

namespace {

// A method's figures for the export report: instructions, values, planned vs naive bytes, operators
// (also collected into `all_ops`).
PteMethodStats method_stats(const Plan& p, const PteWriteOptions& opt, std::set<std::string>& all_ops) {
  PteMethodStats st;
  st.name = p.name;
  st.instructions = static_cast<int>(p.calls.size());
  st.values = static_cast<int>(p.values.size());
  st.planned_bytes = p.non_const_buffer_sizes.back();
  for (const EV& e : p.values)
    if (e.kind == fb::KernelTypes::Tensor && e.planned)
      st.naive_bytes += static_cast<int64_t>(align_up(e.nbytes, opt.memory_alignment));
  for (const auto& [n, o] : p.operators) {
    std::string full = o.empty() ? n : n + "." + o;
    st.operators.push_back(full);
    all_ops.insert(full);
  }
  st.delegate_calls = static_cast<int>(p.delegates.size());
  st.nodes = p.nodes;
  st.delegated_nodes = p.delegated_nodes;
  st.flops = p.flops;
  st.delegated_flops = p.delegated_flops;
  st.portable_flops = p.portable_flops;
  return st;
}

// The file: the flatbuffer with ExecuTorch's extended header inserted after its 8-byte header (32 bytes
// keep every internal alignment, a multiple of the largest force_align, 16; only the root offset is
// absolute), then the segments at their offsets from the aligned segment base.
void assemble(flatbuffers::FlatBufferBuilder& b,
              const std::vector<std::pair<const std::vector<uint8_t>*, uint64_t>>& segs, uint64_t seg_end,
              const PteWriteOptions& opt, std::vector<uint8_t>& out) {
  constexpr size_t kHeader = 32;
  const uint8_t* fbdata = b.GetBufferPointer();
  size_t fbsize = b.GetSize();
  size_t program_size = fbsize + kHeader;
  uint64_t base = align_up(program_size, opt.segment_alignment);
  out.assign(base + seg_end, 0);
  uint32_t root_off = static_cast<uint32_t>(fbdata[0] | fbdata[1] << 8 | fbdata[2] << 16 |
                                            static_cast<uint32_t>(fbdata[3]) << 24);
  put_u32(out.data(), root_off + static_cast<uint32_t>(kHeader));
  std::memcpy(out.data() + 4, fbdata + 4, 4);
  uint8_t* h = out.data() + 8;
  std::memcpy(h, "eh00", 4);
  put_u32(h + 4, 32);            // header length (without padding)
  put_u64(h + 8, program_size);  // flatbuffer data incl. headers
  put_u64(h + 16, base);         // segment base offset
  put_u64(h + 24, seg_end);      // segment data size
  std::memcpy(out.data() + 8 + kHeader, fbdata + 8, fbsize - 8);
  for (const auto& [d, off] : segs)
    if (!d->empty()) std::memcpy(out.data() + base + off, d->data(), d->size());
}

}  // namespace

PteWriteResult write_pte(const std::vector<PteMethodSpec>& methods,
                         const std::vector<PteConstMethod>& const_methods, const PteWriteOptions& opt) {
  PteWriteResult res;
  Pools pools(opt);
  std::vector<Plan> plans;
  std::set<std::string> names, all_ops;
  for (const auto& m : methods) {
    if (!m.graph) HFX_THROW("executorch", "expected a graph for method '{}', got none", m.name);
    if (!names.insert(m.name).second)
      HFX_THROW("executorch", "expected unique method names, got '{}' twice", m.name);
    MethodEmitter em(m, pools, opt);
    plans.push_back(em.emit());
    const Plan& p = plans.back();
    res.methods.push_back(method_stats(p, opt, all_ops));
    res.warnings.insert(res.warnings.end(), p.warnings.begin(), p.warnings.end());
  }
  for (const auto& c : const_methods) {
    if (!names.insert(c.name).second)
      HFX_THROW("executorch", "expected unique method names, got '{}' twice", c.name);
    plans.push_back(const_plan(c));
  }
  res.operators.assign(all_ops.begin(), all_ops.end());
  res.constant_bytes = static_cast<int64_t>(pools.constants.size());
  res.mutable_bytes = static_cast<int64_t>(pools.mutables.size());

  // Segments after the flatbuffer: [0] constants, [1] initial values of mutable buffers (if any).
  std::vector<std::pair<const std::vector<uint8_t>*, uint64_t>> segs;  // data, offset from segment base
  uint64_t seg_end = 0;
  auto add_seg = [&](const std::vector<uint8_t>& d) {
    uint64_t off = align_up(seg_end, opt.segment_alignment);
    segs.emplace_back(&d, off);
    seg_end = off + d.size();
    return static_cast<uint32_t>(segs.size() - 1);
  };
  uint32_t const_seg = add_seg(pools.constants);
  bool has_mut = pools.mutable_offsets.size() > 1;
  uint32_t mut_seg = has_mut ? add_seg(pools.mutables) : 0;
  // Then each delegate payload, then each piece of named data (ExecuTorch's layout: one segment each).
  const auto payload_seg0 = static_cast<uint32_t>(segs.size());
  for (const auto& pl : pools.payloads) add_seg(pl), res.delegate_bytes += static_cast<int64_t>(pl.size());
  const auto named_seg0 = static_cast<uint32_t>(segs.size());
  for (const auto& nd : pools.named)
    add_seg(nd.second), res.named_data_bytes += static_cast<int64_t>(nd.second.size());

  flatbuffers::FlatBufferBuilder b(1 << 16);
  std::vector<flatbuffers::Offset<fb::ExecutionPlan>> eps;
  for (const Plan& p : plans) eps.push_back(pack(b, p, payload_seg0));
  std::vector<flatbuffers::Offset<fb::DataSegment>> seg_tables;
  for (const auto& [d, off] : segs) seg_tables.push_back(fb::CreateDataSegment(b, off, d->size()));
  auto cseg = fb::CreateSubsegmentOffsetsDirect(b, const_seg, &pools.constant_offsets);
  std::vector<flatbuffers::Offset<fb::SubsegmentOffsets>> msegs;
  if (has_mut) msegs.push_back(fb::CreateSubsegmentOffsetsDirect(b, mut_seg, &pools.mutable_offsets));
  std::vector<flatbuffers::Offset<fb::Buffer>> no_buffers;  // deprecated inline constants: always empty
  std::vector<flatbuffers::Offset<fb::BackendDelegateInlineData>> no_delegate_data;
  std::vector<flatbuffers::Offset<fb::NamedData>> named;
  for (size_t i = 0; i < pools.named.size(); i++)
    named.push_back(
        fb::CreateNamedDataDirect(b, pools.named[i].first.c_str(), named_seg0 + static_cast<uint32_t>(i)));
  auto root = fb::CreateProgramDirect(b, /*version=*/0, &eps, &no_buffers, &no_delegate_data, &seg_tables,
                                      cseg, has_mut ? &msegs : nullptr, named.empty() ? nullptr : &named);
  fb::FinishProgramBuffer(b, root);

  assemble(b, segs, seg_end, opt, res.bytes);
  return res;
}

}  // namespace hfx::et
