// Incremental Server-Sent-Events parser (the WHATWG "event stream" format).
//
// Feed response bytes as they arrive, in chunks of any size (a line, a field name or a CRLF
// may be split across chunks); complete events come out in order. Lines may end in "\r\n",
// "\n" or "\r"; lines starting with ':' are comments; several "data:" lines are joined with
// "\n"; one space after the colon is dropped; an event is dispatched at an empty line and only
// when it has data. The last event id persists across events, as the spec requires.
// Not thread-safe: one parser per stream.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace codeact::core {

struct SseEvent {
  std::string event = "message";  // the "event:" field, "message" when absent
  std::string data;               // "data:" lines joined with "\n"
  std::string id;                 // last "id:" seen in this stream ("" if none)
  std::optional<int64_t> retry;   // "retry:" in this event's block (milliseconds)
  bool operator==(const SseEvent&) const = default;
};

class SseParser {
 public:
  // Parses `bytes` and calls on_event for each event completed by them.
  void feed(std::string_view bytes, const std::function<void(SseEvent&&)>& on_event);
  // Convenience: returns the events completed by `bytes`.
  std::vector<SseEvent> feed(std::string_view bytes);

  // True when bytes of an unfinished event are buffered: at end of stream this means the stream
  // was cut in the middle of an event (which the spec says to discard).
  bool has_partial_event() const;
  // The last "retry:" value seen in this stream.
  std::optional<int64_t> retry_ms() const { return retry_ms_; }
  // Back to the initial state (also forgets the last event id).
  void reset();

 private:
  void process_line(std::string_view line, const std::function<void(SseEvent&&)>& on_event);

  std::string line_;             // bytes of the current, unterminated line
  bool last_was_cr_ = false;     // previous chunk ended in '\r': a leading '\n' belongs to it
  bool at_stream_start_ = true;  // a UTF-8 BOM may start the first line
  std::string event_type_;
  std::string data_;
  bool has_data_ = false;
  bool block_started_ = false;  // any field line seen since the last dispatch
  std::string last_id_;
  std::optional<int64_t> block_retry_;
  std::optional<int64_t> retry_ms_;
};

}  // namespace codeact::core
