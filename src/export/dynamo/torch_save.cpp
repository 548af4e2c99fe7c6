// torch.save format writer and the matching reader for the subset it writes (see torch_save.h).
#include "export/dynamo/torch_save.h"

#include <cstring>

#include "hfx/core/error.h"
#include "io/zip.h"

namespace hfx::dynamo {

namespace {

const char* storage_class(DType dt) {
  switch (dt) {
    case DType::F32:
      return "FloatStorage";
    case DType::F16:
      return "HalfStorage";
    case DType::BF16:
      return "BFloat16Storage";
    case DType::I64:
      return "LongStorage";
    case DType::I32:
      return "IntStorage";
    case DType::I8:
      return "CharStorage";
    case DType::U8:
      return "ByteStorage";
    case DType::Bool:
      return "BoolStorage";
  }
  return "FloatStorage";
}

DType storage_dtype(const std::string& cls) {
  for (DType d :
       {DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32, DType::I8, DType::U8, DType::Bool})
    if (cls == storage_class(d)) return d;
  HFX_THROW("pt2", "expected a known torch storage class, got '{}'", cls);
}

// Pickle opcodes (protocol 2 subset).
constexpr char PROTO = '\x80', STOP = '.', MARK = '(', TUPLE = 't', EMPTY_TUPLE = ')', EMPTY_LIST = ']',
               APPENDS = 'e', EMPTY_DICT = '}', SETITEMS = 'u', BINUNICODE = 'X', BININT = 'J',
               LONG1 = '\x8a', NONE = 'N', NEWFALSE = '\x89', NEWTRUE = '\x88', GLOBAL = 'c', REDUCE = 'R',
               BINPERSID = 'Q';

struct Pickler {
  std::string out;
  std::vector<std::pair<std::string, Tensor>> storages;  // key -> contiguous tensor

  void u32(uint32_t v) {
    for (int i = 0; i < 4; i++) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void integer(int64_t v) {
    if (v >= INT32_MIN && v <= INT32_MAX) {
      out.push_back(BININT);
      u32(static_cast<uint32_t>(static_cast<int32_t>(v)));
    } else {
      out.push_back(LONG1);
      out.push_back(8);
      for (int i = 0; i < 8; i++)
        out.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff));
    }
  }
  void str(const std::string& s) {
    out.push_back(BINUNICODE);
    u32(static_cast<uint32_t>(s.size()));
    out += s;
  }
  void global(const std::string& module, const std::string& name) {
    out.push_back(GLOBAL);
    out += module + "\n" + name + "\n";
  }
  void ints_tuple(const Shape& v) {
    out.push_back(MARK);
    for (int64_t x : v) integer(x);
    out.push_back(TUPLE);
  }
  void tensor(const Tensor& t0) {
    Tensor t = t0.is_contiguous() && t0.byte_offset() == 0 ? t0 : t0.contiguous();
    std::string key = std::to_string(storages.size());
    storages.emplace_back(key, t);
    global("torch._utils", "_rebuild_tensor_v2");
    out.push_back(MARK);
    // persistent id: ('storage', torch.<X>Storage, key, 'cpu', numel)
    out.push_back(MARK);
    str("storage");
    global("torch", storage_class(t.dtype()));
    str(key);
    str("cpu");
    integer(t.numel());
    out.push_back(TUPLE);
    out.push_back(BINPERSID);
    integer(0);  // storage offset
    ints_tuple(t.shape());
    ints_tuple(contiguous_strides(t.shape()));
    out.push_back(NEWFALSE);  // requires_grad
    global("collections", "OrderedDict");
    out.push_back(EMPTY_TUPLE);
    out.push_back(REDUCE);
    out.push_back(TUPLE);
    out.push_back(REDUCE);
  }
  void obj(const PyObj& o) {
    switch (o.kind) {
      case PyObj::Kind::None:
        out.push_back(NONE);
        break;
      case PyObj::Kind::Int:
        integer(o.i);
        break;
      case PyObj::Kind::Str:
        str(o.s);
        break;
      case PyObj::Kind::Tensor:
        tensor(o.t);
        break;
      case PyObj::Kind::Tuple:
        if (o.items.empty()) {
          out.push_back(EMPTY_TUPLE);
        } else {
          out.push_back(MARK);
          for (const auto& x : o.items) obj(x);
          out.push_back(TUPLE);
        }
        break;
      case PyObj::Kind::List:
        out.push_back(EMPTY_LIST);
        if (!o.items.empty()) {
          out.push_back(MARK);
          for (const auto& x : o.items) obj(x);
          out.push_back(APPENDS);
        }
        break;
      case PyObj::Kind::Dict:
        out.push_back(EMPTY_DICT);
        if (!o.entries.empty()) {
          out.push_back(MARK);
          for (const auto& [k, v] : o.entries) {
            str(k);
            obj(v);
          }
          out.push_back(SETITEMS);
        }
        break;
    }
  }
};

}  // namespace

std::string torch_save(const PyObj& obj) {
  Pickler p;
  p.out.push_back(PROTO);
  p.out.push_back(2);
  p.obj(obj);
  p.out.push_back(STOP);
  std::string bytes;
  io::AlignedZipWriter z(io::memory_sink(&bytes), "archive");
  z.add("data.pkl", p.out);
  z.add("byteorder", std::string("little"));
  for (const auto& [key, t] : p.storages) z.add("data/" + key, t.raw(), t.nbytes());
  z.add("version", std::string("3\n"));
  z.finish();
  return bytes;
}

// ---------------------------------------------------------------- reader

namespace {

struct Unpickler {
  const std::string& pkl;
  const std::string& zip;
  std::map<std::string, io::ZipRecord> records;
  size_t p = 0;

  // The stack holds PyObj plus markers and a few internal kinds.
  struct Item {
    enum class K { Obj, Mark, Global, PersId } k = K::Obj;
    PyObj o;
    std::string module, name;  // Global
    DType storage_dt = DType::F32;
    std::string key;  // PersId
    Item() = default;
    explicit Item(K kind, PyObj obj = {}) : k(kind), o(std::move(obj)) {}
  };
  static Item obj(PyObj o) { return Item(Item::K::Obj, std::move(o)); }
  std::vector<Item> st;

  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= static_cast<uint32_t>(static_cast<uint8_t>(pkl.at(p + i))) << (8 * i);
    p += 4;
    return v;
  }
  std::vector<Item> pop_mark() {
    size_t m = st.size();
    while (m > 0 && st[m - 1].k != Item::K::Mark) m--;
    if (m == 0) HFX_THROW("pt2", "expected a MARK on the pickle stack, got none");
    std::vector<Item> out(st.begin() + static_cast<long>(m), st.end());
    st.resize(m - 1);
    return out;
  }
  static Shape ints(const PyObj& o) {
    Shape s;
    for (const auto& x : o.items) s.push_back(x.i);
    return s;
  }

  // LONG1: a little-endian two's complement integer of n bytes.
  void long1() {
    int n = static_cast<uint8_t>(pkl.at(p++));
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v |= static_cast<uint64_t>(static_cast<uint8_t>(pkl.at(p + i))) << (8 * i);
    if (n < 8 && n > 0 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);
    p += n;
    st.push_back(obj(PyObj::integer(static_cast<int64_t>(v))));
  }

  // GLOBAL: "module\nname\n".
  void global() {
    size_t a = pkl.find('\n', p), b = pkl.find('\n', a + 1);
    Item g{Item::K::Global};
    g.module = pkl.substr(p, a - p);
    g.name = pkl.substr(a + 1, b - a - 1);
    p = b + 1;
    st.push_back(g);
  }

  // TUPLE, APPENDS, SETITEMS: the items since the last MARK.
  void collect(char op) {
    auto xs = pop_mark();
    if (op == TUPLE) {
      // A tuple holding a global is the persistent id of a storage; keep its parts as items.
      Item t{Item::K::Obj, PyObj::tuple({})};
      for (auto& x : xs) {
        if (x.k == Item::K::Global) t.storage_dt = storage_dtype(x.name);
        t.o.items.push_back(x.o);
      }
      st.push_back(t);
    } else if (op == APPENDS) {
      for (auto& x : xs) st.back().o.items.push_back(x.o);
    } else {
      for (size_t i = 0; i + 1 < xs.size(); i += 2) st.back().o.entries.emplace_back(xs[i].o.s, xs[i + 1].o);
    }
  }

  // REDUCE of OrderedDict (an empty dict) or _rebuild_tensor_v2 (a tensor copied out of its storage record).
  void reduce() {
    Item args = st.back();
    st.pop_back();
    Item fn = st.back();
    st.pop_back();
    if (fn.k == Item::K::Global && fn.name == "OrderedDict") {
      st.push_back(obj(PyObj::dict({})));
    } else if (fn.k == Item::K::Global && fn.name == "_rebuild_tensor_v2") {
      // args were collected by TUPLE; the storage item was turned into an Obj there, so the
      // persistent id is remembered in `pending_`.
      const Item& s = pending_.at(pending_.size() - 1);
      Shape shape = ints(args.o.items.at(2)), strides = ints(args.o.items.at(3));
      int64_t off = args.o.items.at(1).i;
      auto it = records.find("archive/data/" + s.key);
      if (it == records.end()) HFX_THROW("pt2", "expected storage record data/{}, got none", s.key);
      Tensor t = Tensor::empty(shape, s.storage_dt);
      Tensor src(
          Storage::borrow(const_cast<char*>(zip.data()) + it->second.data_offset, it->second.size, nullptr),
          s.storage_dt, shape, strides, off * static_cast<int64_t>(dtype_size(s.storage_dt)));
      copy_to_contiguous(src, t.raw(), s.storage_dt);
      pending_.pop_back();
      st.push_back(obj(PyObj::tensor(t)));
    } else {
      HFX_THROW("pt2", "expected only tensor and OrderedDict reductions in the pickle, got {}.{}", fn.module,
                fn.name);
    }
  }

  PyObj run() {
    for (;;) {
      char op = pkl.at(p++);
      switch (op) {
        case PROTO:
          p++;
          break;
        case STOP:
          return st.back().o;
        case MARK:
          st.push_back(Item(Item::K::Mark));
          break;
        case NONE:
          st.push_back(obj(PyObj::none()));
          break;
        case NEWFALSE:
          st.push_back(obj(PyObj::integer(0)));
          break;
        case NEWTRUE:
          st.push_back(obj(PyObj::integer(1)));
          break;
        case BININT:
          st.push_back(obj(PyObj::integer(static_cast<int32_t>(u32()))));
          break;
        case LONG1:
          long1();
          break;
        case BINUNICODE: {
          uint32_t n = u32();
          st.push_back(obj(PyObj::str(pkl.substr(p, n))));
          p += n;
          break;
        }
        case GLOBAL:
          global();
          break;
        case EMPTY_TUPLE:
          st.push_back(obj(PyObj::tuple({})));
          break;
        case EMPTY_LIST:
          st.push_back(obj(PyObj::list({})));
          break;
        case EMPTY_DICT:
          st.push_back(obj(PyObj::dict({})));
          break;
        case TUPLE:
        case APPENDS:
        case SETITEMS:
          collect(op);
          break;
        case BINPERSID: {
          Item pid = st.back();
          st.pop_back();
          Item s{Item::K::PersId};
          s.storage_dt = pid.storage_dt;
          s.key = pid.o.items.at(2).s;
          st.push_back(s);
          break;
        }
        case REDUCE:
          reduce();
          break;
        default:
          HFX_THROW("pt2", "expected a pickle opcode of the torch.save subset, got 0x{:02x} at {}",
                    static_cast<uint8_t>(op), p - 1);
      }
      // A persistent id becomes an argument of the enclosing tuple: remember it aside.
      if (!st.empty() && st.back().k == Item::K::PersId) {
        pending_.push_back(st.back());
        st.back() = Item{Item::K::Obj, PyObj::str("<storage>")};
      }
    }
  }
  std::vector<Item> pending_;
};

}  // namespace

PyObj torch_load(const std::string& bytes) {
  std::map<std::string, io::ZipRecord> recs;
  for (const auto& r : io::read_zip_index(bytes)) {
    // Tensors are viewed in place, so every record must be stored as torch.save writes it.
    if (r.method != 0)
      HFX_THROW("pt2", "expected stored records in a torch.save file, got compression method {} for {}",
                r.method, r.name);
    recs[r.name] = r;
  }
  auto it = recs.find("archive/data.pkl");
  if (it == recs.end()) HFX_THROW("pt2", "expected archive/data.pkl in a torch.save file, got none");
  std::string pkl = bytes.substr(it->second.data_offset, it->second.size);
  Unpickler u{pkl, bytes, recs, 0, {}, {}};
  return u.run();
}

}  // namespace hfx::dynamo
