#include <utility>

#include "codeact/core/sse.hpp"

namespace codeact::core {

namespace {
constexpr std::string_view kBom = "\xEF\xBB\xBF";
}  // namespace

void SseParser::feed(std::string_view bytes, const std::function<void(SseEvent&&)>& on_event) {
  size_t i = 0;
  if (last_was_cr_ && !bytes.empty()) {
    if (bytes[0] == '\n') i = 1;  // second half of a CRLF split across chunks
    last_was_cr_ = false;
  }
  while (i < bytes.size()) {
    size_t end = bytes.find_first_of("\r\n", i);
    if (end == std::string_view::npos) {
      line_.append(bytes.substr(i));
      return;
    }
    line_.append(bytes.substr(i, end - i));
    process_line(line_, on_event);
    line_.clear();
    if (bytes[end] == '\r') {
      if (end + 1 < bytes.size()) {
        i = bytes[end + 1] == '\n' ? end + 2 : end + 1;
      } else {
        last_was_cr_ = true;
        i = end + 1;
      }
    } else {
      i = end + 1;
    }
  }
}

std::vector<SseEvent> SseParser::feed(std::string_view bytes) {
  std::vector<SseEvent> events;
  feed(bytes, [&](SseEvent&& e) { events.push_back(std::move(e)); });
  return events;
}

void SseParser::process_line(std::string_view line,
                             const std::function<void(SseEvent&&)>& on_event) {
  if (at_stream_start_) {
    at_stream_start_ = false;
    if (line.substr(0, kBom.size()) == kBom) line.remove_prefix(kBom.size());
  }
  if (line.empty()) {
    if (has_data_) {
      SseEvent event;
      event.event = event_type_.empty() ? "message" : event_type_;
      event.data = std::move(data_);
      event.id = last_id_;
      event.retry = block_retry_;
      on_event(std::move(event));
    }
    event_type_.clear();
    data_.clear();
    has_data_ = false;
    block_started_ = false;
    block_retry_.reset();
    return;
  }
  if (line.front() == ':') return;  // comment
  block_started_ = true;
  std::string_view field = line;
  std::string_view value;
  if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "event") {
    event_type_ = std::string(value);
  } else if (field == "data") {
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) last_id_ = std::string(value);
  } else if (field == "retry") {
    if (!value.empty() && value.find_first_not_of("0123456789") == std::string_view::npos &&
        value.size() < 18) {
      block_retry_ = std::stoll(std::string(value));
      retry_ms_ = block_retry_;
    }
  }
  // Other fields are ignored, as the spec requires.
}

bool SseParser::has_partial_event() const { return has_data_ || block_started_ || !line_.empty(); }

void SseParser::reset() { *this = SseParser(); }

}  // namespace codeact::core
