// Ports on 127.0.0.1 for the local servers codeact starts (the Temporal dev server, llama-server).
// Thread-safe. A port found free may be taken by another process before it is used: callers
// check that the server they started is theirs.
#pragma once

namespace codeact::core {

// A TCP port on 127.0.0.1 that nothing listens on now (0 when none could be had).
int free_loopback_port();
// True when `port` on 127.0.0.1 can be bound now.
bool loopback_port_free(int port);

}  // namespace codeact::core
