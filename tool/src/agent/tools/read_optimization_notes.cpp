// read_optimization_notes: the bundled notes (agent/agent_notes.cpp) by topic.
#include <algorithm>

#include "agent/agent.h"
#include "agent/common.h"
#include "agent/tools/registry.h"

namespace kopt::agent::tools::read_optimization_notes {

using nlohmann::json;

ToolDef define() {
  json topics = json::array();
  for (const auto& [t, text] : optimization_notes()) topics.push_back(t);
  return {"", "Short CUDA optimization notes on one topic.",
          {{"type", "object"},
           {"properties", {{"topic", {{"type", "string"}, {"enum", topics}}}}},
           {"required", {"topic"}}}};
}

json run(Session&, const json& a) {
  std::string topic;
  if (auto t = a.find("topic"); t != a.end() && t->is_string()) topic = lower(t->get<std::string>());
  std::replace(topic.begin(), topic.end(), '_', '-');
  std::replace(topic.begin(), topic.end(), ' ', '-');
  json topics = json::array();
  for (const auto& [name, text] : optimization_notes()) {
    if (!topic.empty() && (name == topic || name.find(topic) != std::string::npos)) return {{"topic", name}, {"notes", text}};
    topics.push_back(name);
  }
  return {{"unknown_topic", topic}, {"topics", topics}, {"hint", "call read_optimization_notes with one of these topics"}};
}

}  // namespace kopt::agent::tools::read_optimization_notes
