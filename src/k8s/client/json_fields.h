// Reading what the API server sent without trusting its shape: nlohmann's value() and operator[]
// throw on a member of an unexpected type, and an exception must never take the plugin down
// because a peer sent `"metadata": 5`. These return "absent" instead.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace fgpu::k8s {

// The member, or nullptr when `object` is not an object or the member is absent or null.
inline const nlohmann::json* Member(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto found = object.find(key);
  return found == object.end() || found->is_null() ? nullptr : &*found;
}

// The member's text; "" unless it is a string.
inline std::string StringMember(const nlohmann::json& object, const char* key) {
  const nlohmann::json* value = Member(object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
}

// The member as an integer; nullopt unless it is one that fits int64.
inline std::optional<int64_t> IntegerMember(const nlohmann::json& object, const char* key) {
  const nlohmann::json* value = Member(object, key);
  if (value == nullptr || !value->is_number_integer()) return std::nullopt;
  if (value->is_number_unsigned() && value->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return value->get<int64_t>();
}

// Member(object, a) then its member b.
inline const nlohmann::json* Path(const nlohmann::json& object, const char* a, const char* b) {
  const nlohmann::json* first = Member(object, a);
  return first == nullptr ? nullptr : Member(*first, b);
}

}  // namespace fgpu::k8s
