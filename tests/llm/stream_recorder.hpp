// Records the events a Model streams, and reads back what a UI would have shown.
#pragma once

#include <string>
#include <vector>

#include "codeact/llm/model.hpp"

namespace codeact::llm::testing {

struct StreamRecorder {
  std::vector<ModelStreamEvent> events;

  StreamHandler handler() {
    return [this](const ModelStreamEvent& e) {
      events.push_back(e);
      return true;
    };
  }
  template <class T>
  int count() const {
    int n = 0;
    for (const auto& e : events) n += std::holds_alternative<T>(e) ? 1 : 0;
    return n;
  }
  // Concatenated text / argument deltas of the part at `index`.
  std::string deltas(int index) const {
    std::string out;
    for (const auto& e : events) {
      auto* d = std::get_if<PartDeltaEvent>(&e);
      if (d == nullptr || d->index != index) continue;
      if (auto* t = std::get_if<TextPartDelta>(&d->delta)) out += t->content_delta;
      if (auto* c = std::get_if<ToolCallPartDelta>(&d->delta)) out += c->args_delta;
      if (auto* k = std::get_if<ThinkingPartDelta>(&d->delta)) out += k->content_delta;
    }
    return out;
  }
  const ModelResponsePart* started(int index) const {
    for (const auto& e : events) {
      if (auto* s = std::get_if<PartStartEvent>(&e); s && s->index == index) return &s->part;
    }
    return nullptr;
  }
  int delta_count(int index) const {
    int n = 0;
    for (const auto& e : events) {
      if (auto* d = std::get_if<PartDeltaEvent>(&e); d && d->index == index) ++n;
    }
    return n;
  }
};

inline std::vector<ModelMessage> user_says(const std::string& text) {
  return {ModelRequest::user_prompt(text)};
}

}  // namespace codeact::llm::testing
