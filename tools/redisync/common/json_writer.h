// SPDX-License-Identifier: Apache-2.0
// A minimal streaming JSON writer: objects, arrays, strings (escaped), integers, booleans.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace redisync::cli {

/// `text` as a JSON string literal, quotes included. Control characters are escaped; bytes
/// that are not valid UTF-8 (Redis keys are arbitrary bytes) become \u00XX (read as Latin-1),
/// so the output is always valid JSON.
std::string json_quote(std::string_view text);

/// True when `text` is valid UTF-8 (JSON then carries it exactly).
bool is_utf8(std::string_view text);

/// Writes compact JSON. Call key() before each value inside an object.
///   JsonWriter w; w.begin_object().key("n").value(1).end_object();  // {"n":1}
class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);
  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(const std::string& text) { return value(std::string_view(text)); }
  JsonWriter& value(bool b);
  template <std::integral T>
  requires(!std::same_as<T, bool>) JsonWriter& value(T number) {
    return raw(std::to_string(number));
  }
  JsonWriter& null();
  /// key(name).value(v)
  template <class T>
  JsonWriter& field(std::string_view name, const T& v) {
    return key(name).value(v);
  }

  const std::string& str() const { return out_; }

 private:
  JsonWriter& raw(std::string_view token);
  void before_value();

  std::string out_;
  std::vector<bool> has_items_;  // one entry per open object/array
  bool after_key_ = false;
};

}  // namespace redisync::cli
