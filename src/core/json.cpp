// Checked JSON accessors (see the header): messages that name the file and key and say what to fix.
#include "hfx/core/json.h"

#include "hfx/core/error.h"

namespace hfx::jsonc {

std::string describe(const json& v) {
  std::string text = v.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean " + text;
    case json::value_t::string:
      return "a string " + text;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer " + text;
    case json::value_t::number_float:
      return "a number " + text;
    case json::value_t::array:
      return "a list " + text;
    case json::value_t::object:
      return "an object " + text;
    default:
      return std::string(v.type_name()) + " " + text;
  }
}

void type_mismatch(std::string_view component, std::string_view where, std::string_view want, const json& v) {
  HFX_THROW(std::string(component), "expected {} to be {}, got {} (fix that value in the file)", where, want,
            describe(v));
}

void out_of_range(std::string_view component, std::string_view where, std::string_view kind, long double lo,
                  long double hi, const json& v) {
  HFX_THROW(std::string(component),
            "expected {} to be {} from {:.0f} to {:.0f}, got {} (fix that value in the file)", where, kind,
            lo, hi, describe(v));
}

namespace detail {
std::string member(std::string_view where, const char* key) { return fmt::format("{}.{}", where, key); }
std::string element(std::string_view where, size_t i) { return fmt::format("{}[{}]", where, i); }
}  // namespace detail

const json& object(const json& obj, std::string_view component, std::string_view where) {
  if (!obj.is_object()) type_mismatch(component, where, "an object", obj);
  return obj;
}

const json& array(const json& v, std::string_view component, std::string_view where) {
  if (!v.is_array()) type_mismatch(component, where, "a list", v);
  return v;
}

const json& at(const json& obj, const char* key, std::string_view component, std::string_view where) {
  object(obj, component, where);
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null())
    HFX_THROW(std::string(component), "expected key '{}' in {}, got {} (add it to the file)", key, where,
              it == obj.end() ? "none" : "null");
  return *it;
}

bool has(const json& obj, const char* key) {
  if (!obj.is_object()) return false;
  auto it = obj.find(key);
  return it != obj.end() && !it->is_null();
}

json parse(std::string_view text, std::string_view component, std::string_view where) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    HFX_THROW(std::string(component), "expected valid JSON in {}, got a syntax error at byte {}: {}", where,
              e.byte, e.what());
  }
}

}  // namespace hfx::jsonc
