// The event stream of one session (GET /v1/sessions/{id}/events, docs/server.md "Events") over
// the browser's EventSource, which reconnects by itself with Last-Event-ID and so gets every
// event it missed exactly once. When the browser gives up (an HTTP error answer closes the
// EventSource for good) the feed reports it as fatal; the page then reloads the whole session
// (its turns and a fresh stream) after a back-off, since a new EventSource cannot resume.
//
//   const feed = new EventFeed(url, {
//     onEvent(type, data) {},          // every server event, data parsed from JSON
//     onOpen() {},                     // connected (again): hide the banner
//     onLost(fatal) {},                // connection lost; fatal: the browser stopped retrying
//   });
//   feed.close();

export const EVENT_TYPES = [
  'status', 'user_message', 'step', 'text', 'text_delta', 'cell', 'cell_output', 'cell_result',
  'tool_call', 'tool_result', 'retry', 'sandbox', 'files', 'usage', 'final', 'error',
  'turn_cancelled', 'end', 'shutdown',
];

export class EventFeed {
  constructor(url, handlers) {
    this.handlers = handlers;
    this.closed = false;
    this.source = new EventSource(url, { withCredentials: false });
    this.source.addEventListener('open', () => {
      if (!this.closed) this.handlers.onOpen?.();
    });
    for (const type of EVENT_TYPES) {
      this.source.addEventListener(type, (ev) => this.dispatch(type, ev));
    }
  }

  dispatch(type, ev) {
    if (this.closed) return;
    // `event: error` from the server and the EventSource's own connection error share a name:
    // only the server's carries data.
    if (type === 'error' && !(ev instanceof MessageEvent && typeof ev.data === 'string')) {
      const fatal = this.source.readyState === EventSource.CLOSED;
      this.handlers.onLost?.(fatal);
      return;
    }
    let data = {};
    try {
      data = ev.data ? JSON.parse(ev.data) : {};
    } catch {
      return;  // not an event of the contract
    }
    if (data === null || typeof data !== 'object') data = {};
    if (type === 'end') this.close();
    this.handlers.onEvent(type, data, ev.lastEventId);
  }

  close() {
    this.closed = true;
    this.source.close();
  }
}
