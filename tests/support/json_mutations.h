// tests/support/json_mutations.h — every JSON document one wrong value away from a valid one.
//
// The malformed-input tests take a valid file (a tiny config.json, a tokenizer fixture, a manifest) and
// replace one value at a time by a value of each other JSON type; a reader must then either accept the
// file or refuse it with hfx::Error "[component] expected ..." — never a raw nlohmann exception, and never
// with nlohmann's text ("[json.exception.type_error.302] ...") in its message.
#pragma once
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "hfx/core/error.h"

namespace hfx::jsontest {

/// Values of every JSON type, each wrong for most fields.
inline std::vector<nlohmann::json> wrong_values() {
  return {"x", 7, -1, 1.5, true, nullptr, nlohmann::json::array(), nlohmann::json::object(), {1, "a"}};
}

/// Calls `fn(path, doc)` for `doc` with one value replaced, for every value up to `depth` levels down
/// (containers with more than `wide` children: the first `wide` of them).
inline void for_each_mutation(const nlohmann::json& doc, int depth, size_t wide,
                              const std::function<void(const std::string&, const nlohmann::json&)>& fn) {
  std::function<void(const nlohmann::json::json_pointer&, const nlohmann::json&, int)> walk =
      [&](const nlohmann::json::json_pointer& ptr, const nlohmann::json& node, int level) {
        if (!ptr.empty()) {
          for (const auto& v : wrong_values()) {
            if (v.type() == node.type() && v == node) continue;
            nlohmann::json m = doc;
            m[ptr] = v;
            fn(ptr.to_string() + " = " + v.dump(), m);
          }
        }
        if (level >= depth || !node.is_structured()) return;
        size_t n = 0;
        for (auto it = node.begin(); it != node.end() && n < wide; ++it, ++n)
          walk(node.is_object() ? ptr / it.key() : ptr / n, it.value(), level + 1);
      };
  walk(nlohmann::json::json_pointer(), doc, 0);
}

/// Runs `read`; passes if it returns or throws a clear hfx::Error of one of `components` ("a|b").
inline void expect_clear_refusal(const std::string& what, const std::string& components,
                                 const std::function<void()>& read) {
  try {
    read();
  } catch (const hfx::Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find("json.exception"), std::string::npos) << what << ": expected our own message, got " << m;
    bool shaped = false;
    for (size_t at = 0; at <= components.size();) {
      size_t bar = std::min(components.find('|', at), components.size());
      shaped |= m.rfind("[" + components.substr(at, bar - at) + "] expected", 0) == 0;
      at = bar + 1;
    }
    EXPECT_TRUE(shaped) << what << ": expected '[" << components << "] expected ...', got " << m;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": expected hfx::Error, got " << typeid(e).name() << ": " << e.what();
  }
}

}  // namespace hfx::jsontest
