// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the parsers of topology replies that run on the I/O thread — Sentinel's
// GET-MASTER-ADDR-BY-NAME (net::parse_master_addr), CLUSTER SHARDS / CLUSTER SLOTS
// (net::parse_cluster_shards / parse_cluster_slots) and MOVED/ASK redirects
// (net::parse_redirect), Sentinel's +switch-master message (net::parse_switch_master) and the
// INFO replication replica count (net::parse_connected_replicas). A malformed reply there once
// reached std::stoi and ended the process; a +switch-master port of 70000 was once followed
// as port 4464.
//
// The input is decoded into a reply tree: each byte's low 3 bits pick the kind (nil, string,
// status, error, integer, array), strings take a length byte and that many bytes, integers 8
// bytes, arrays a count byte (nesting bounded). Contract checked: every parser returns or
// throws a redisync::Error (ProtocolError), never anything else, never crashes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "net/cluster_map.h"
#include "net/sentinel.h"
#include "net/server_text.h"
#include "redisync/errors.h"

namespace {

struct Input {
  const std::uint8_t* data;
  std::size_t size;
  std::size_t pos = 0;
  bool more() const { return pos < size; }
  std::uint8_t byte() { return more() ? data[pos++] : 0; }
};

redisync::Reply decode(Input& in, int depth) {
  redisync::Reply r;
  const std::uint8_t tag = in.byte();
  switch (tag % 6) {
    case 0: r.kind = redisync::Reply::Kind::nil; break;
    case 1: case 2: case 3: {
      r.kind = tag % 6 == 1   ? redisync::Reply::Kind::string
               : tag % 6 == 2 ? redisync::Reply::Kind::status
                              : redisync::Reply::Kind::error;
      const std::size_t n = in.byte();
      for (std::size_t i = 0; i < n && in.more(); ++i) r.str += static_cast<char>(in.byte());
      break;
    }
    case 4: {
      r.kind = redisync::Reply::Kind::integer;
      std::uint64_t v = 0;
      for (int i = 0; i < 8; ++i) v = (v << 8) | in.byte();
      std::memcpy(&r.integer, &v, sizeof v);
      break;
    }
    default: {
      r.kind = redisync::Reply::Kind::array;
      const std::size_t n = depth < 6 ? in.byte() % 16 : 0;
      for (std::size_t i = 0; i < n && in.more(); ++i) r.elements.push_back(decode(in, depth + 1));
      break;
    }
  }
  return r;
}

template <class F>
void only_redisync_errors(const char* what, F f) {
  try {
    f();
  } catch (const redisync::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "topology_fuzz: %s threw a non-redisync exception: %s\n", what, e.what());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in{data, size};
  const redisync::Reply reply = decode(in, 0);
  only_redisync_errors("parse_master_addr", [&] {
    std::string host, why;
    std::uint16_t port = 0;
    if (redisync::net::parse_master_addr(reply, host, port, why) && (host.empty() || port == 0)) {
      std::fprintf(stderr, "topology_fuzz: parse_master_addr accepted an empty address\n");
      std::abort();
    }
  });
  only_redisync_errors("parse_cluster_shards",
                       [&] { redisync::net::parse_cluster_shards(reply, "127.0.0.1"); });
  only_redisync_errors("parse_cluster_slots",
                       [&] { redisync::net::parse_cluster_slots(reply, "127.0.0.1"); });
  only_redisync_errors("parse_redirect", [&] {
    bool ask = false;
    int slot = 0;
    std::string host;
    std::uint16_t port = 0;
    redisync::net::parse_redirect(reply.str, ask, slot, host, port);
  });
  // The text parsers see the reply's own text and each element's (a pub/sub message's
  // payload is its third element).
  std::vector<const std::string*> texts{&reply.str};
  for (const auto& e : reply.elements) texts.push_back(&e.str);
  for (const std::string* text : texts) {
    only_redisync_errors("parse_switch_master", [&] {
      std::string name, host;
      std::uint16_t port = 0;
      if (redisync::net::parse_switch_master(*text, name, host, port) &&
          (name.empty() || host.empty() || port == 0 || host.find(' ') != std::string::npos)) {
        std::fprintf(stderr, "topology_fuzz: parse_switch_master accepted a bad address\n");
        std::abort();
      }
    });
    only_redisync_errors("parse_connected_replicas", [&] {
      const auto count = redisync::net::parse_connected_replicas(*text);
      if (count && *count < 0) {
        std::fprintf(stderr, "topology_fuzz: parse_connected_replicas gave a negative count\n");
        std::abort();
      }
    });
  }
  return 0;
}
