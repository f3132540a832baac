// A strict parser for the YAML subset real kubeconfig files use, into nlohmann::json.
//
// Why not yaml-cpp: one more third-party library for ~40 lines of a config file whose writers
// (kubectl, kind, k3s, cloud CLIs) stick to block mappings, block sequences and plain or quoted
// scalars. Anything outside the subset is an error naming the line, never a guess: anchors,
// aliases, tags, block scalars (| >), multi-document files, non-empty flow collections, tabs in
// indentation, duplicate keys. Scalars become JSON strings, except true/false (booleans) and
// null/~ (null); numbers stay strings (no kubeconfig field is numeric).
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace fgpu::k8s {

Result<nlohmann::json> ParseYamlSubset(std::string_view text);

}  // namespace fgpu::k8s
