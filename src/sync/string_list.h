// SPDX-License-Identifier: Apache-2.0
// A vector of strings built from its items without the copies an initializer list makes (its
// elements are const, so `{a, b, c}` copies every string once more): on the hot path of every
// acquire and release, that was half of the allocations of the script arguments.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace redisync::sync {

template <class... Items>
std::vector<std::string> string_list(Items&&... items) {
  std::vector<std::string> out;
  out.reserve(sizeof...(Items));
  (out.emplace_back(std::forward<Items>(items)), ...);
  return out;
}

}  // namespace redisync::sync
