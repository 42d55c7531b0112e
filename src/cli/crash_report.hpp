// On a crash (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) codeact writes the signal and a backtrace
// of the crashing thread to stderr before it dies as it would have (the default action: a core
// dump where enabled). The frames are `codeact(+0xOFFSET)`: `addr2line -f -C -i -e codeact
// OFFSET...` turns them into functions and lines of the same build. Only async-signal-safe calls
// after the first backtrace() (made at install time so its loader lock is not taken in the
// handler).
#pragma once

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

namespace codeact::cli {

inline void install_crash_report() {
  static void* warm[1];
  backtrace(warm, 1);  // loads libgcc's unwinder now, not in the handler
  struct sigaction sa {};
  sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
  sa.sa_handler = [](int sig) {
    char number[4] = {static_cast<char>('0' + sig / 10 % 10), static_cast<char>('0' + sig % 10)};
    const char head[] = "\ncodeact: crashed with signal ";
    (void)!write(STDERR_FILENO, head, sizeof head - 1);
    (void)!write(STDERR_FILENO, number, 2);
    const char tail[] = "; backtrace (addr2line -f -C -i -e codeact OFFSET):\n";
    (void)!write(STDERR_FILENO, tail, sizeof tail - 1);
    void* frames[64];
    const int n = backtrace(frames, 64);
    backtrace_symbols_fd(frames, n, STDERR_FILENO);
    raise(sig);  // SA_RESETHAND: the default action now
  };
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) sigaction(sig, &sa, nullptr);
}

}  // namespace codeact::cli
