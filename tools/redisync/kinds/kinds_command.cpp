// SPDX-License-Identifier: Apache-2.0
#include "kinds_command.h"

#include <algorithm>
#include <iostream>

#include "json_writer.h"
#include "kinds.h"

namespace redisync::cli {
namespace {

std::string aliases_text(const KindInfo& k) {
  std::string text;
  for (auto alias : k.aliases) text += std::string(text.empty() ? "" : ", ") + std::string(alias);
  return text;
}

std::string render_text() {
  std::size_t width = 0;
  for (const auto& k : all_kinds()) width = std::max(width, k.name.size());
  std::string out;
  for (const auto& k : all_kinds()) {
    out += std::string(k.name) + std::string(width - k.name.size() + 2, ' ') + std::string(k.about);
    if (!k.aliases.empty()) out += " [also accepted: " + aliases_text(k) + "]";
    out += "\n";
  }
  return out;
}

std::string render_json() {
  JsonWriter w;
  w.begin_array();
  for (const auto& k : all_kinds()) {
    w.begin_object().field("name", k.name).field("noun", k.noun);
    w.key("aliases").begin_array();
    for (auto alias : k.aliases) w.value(alias);
    w.end_array();
    w.field("about", k.about).end_object();
  }
  w.end_array();
  return w.str();
}

}  // namespace

CLI::App* add_kinds_command(CLI::App& app, KindsOptions& o) {
  CLI::App* kinds = app.add_subcommand("kinds", "List the kind names every command uses");
  kinds->footer(
      "The names `ls`, `status`, `unlock`, `run --kind`, `demo --kind`, --json and the\n"
      "metrics' kind label use, one per line with what it is. An earlier spelling shown as\n"
      "'also accepted' still works where a kind is given, but is never printed.");
  kinds->add_flag("--json", o.json, "Print a JSON array instead of aligned lines");
  return kinds;
}

int kinds_command(const KindsOptions& o) {
  std::cout << (o.json ? render_json() + "\n" : render_text()) << std::flush;
  return 0;
}

}  // namespace redisync::cli
