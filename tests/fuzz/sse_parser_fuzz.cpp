// Fuzzes core::SseParser (the event-stream parser under every provider stream and MCP's HTTP
// transports). Besides memory and UB errors it checks the parser's contract: the same bytes give
// the same events whether they arrive at once or in pieces of any size.
#include <cstdio>
#include <cstdlib>

#include "codeact/core/sse.hpp"
#include "fuzz_input.hpp"

using codeact::core::SseEvent;
using codeact::core::SseParser;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input = codeact::fuzz::as_text(data, size);

  SseParser whole;
  std::vector<SseEvent> at_once = whole.feed(input);

  SseParser pieces;
  std::vector<SseEvent> piecewise;
  codeact::fuzz::ChunkSizes sizes(input, 16);
  for (std::string_view piece : sizes.split(input))
    pieces.feed(piece, [&](SseEvent&& e) { piecewise.push_back(std::move(e)); });

  if (at_once != piecewise || whole.has_partial_event() != pieces.has_partial_event() ||
      whole.retry_ms() != pieces.retry_ms()) {
    std::fprintf(stderr, "SseParser: %zu events at once, %zu in pieces (partial %d/%d)\n",
                 at_once.size(), piecewise.size(), whole.has_partial_event(),
                 pieces.has_partial_event());
    std::abort();
  }
  whole.reset();
  if (whole.has_partial_event() || whole.retry_ms()) std::abort();
  return 0;
}
