// The signaling connection (docs/signaling.md): one WebSocket to /ws that enters the room as
// audience, and is made again with a bounded backoff when it drops.

/** Delay before reconnect attempt `attempt` (0-based): 0.5 s doubling to at most 8 s, with jitter. */
export function backoff(attempt) {
  const base = Math.min(8000, 500 * 2 ** Math.min(attempt, 10));
  return base / 2 + Math.random() * base / 2;
}

/** The most reconnect attempts in a row before the page gives up (about 4 minutes). */
export const maxAttempts = 30;

export class Signaling {
  /**
   * @param {object} options `url`, `enter` (the enterRoom request), and callbacks
   *   `onEvent(event)`, `onState(state)` with "connecting" | "open" | "offline" | "gave-up".
   */
  constructor(options) {
    this.options = options;
    this.socket = null;
    this.attempt = 0;
    this.timer = null;
    this.stopped = false;
    // A network change: the old connection is usually dead without knowing it yet, so it is
    // dropped at once, and the next one is made as soon as the browser is online again.
    addEventListener('offline', () => this.networkLost());
    addEventListener('online', () => this.reconnectNow());
  }

  networkLost() {
    if (this.stopped) return;
    const socket = this.socket;
    this.socket = null;
    if (socket) { socket.onclose = null; socket.close(); }
    this.attempt = 0;
    this.scheduleReconnect();
  }

  start() { this.connect(); }

  /** Ends the connection for good (a replaced session, bad credentials). */
  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.socket) this.socket.close(1000);
  }

  /** Closes the connection as a network failure would: it is made again with the backoff. */
  drop() {
    if (this.socket) this.socket.close(1000);
  }

  /** Sends a request; false when the connection is not open. */
  send(request) {
    if (!this.socket || this.socket.readyState !== WebSocket.OPEN) return false;
    this.socket.send(JSON.stringify(request));
    return true;
  }

  /** After a network change: try at once instead of waiting out the backoff. */
  reconnectNow() {
    if (this.stopped || (this.socket && this.socket.readyState <= WebSocket.OPEN)) return;
    clearTimeout(this.timer);
    this.attempt = 0;
    this.connect();
  }

  connect() {
    if (this.stopped) return;
    this.options.onState('connecting');
    let socket;
    try {
      socket = new WebSocket(this.options.url);
    } catch (error) {
      this.scheduleReconnect();
      return;
    }
    this.socket = socket;
    socket.onopen = () => {
      socket.send(JSON.stringify(this.options.enter));
    };
    socket.onmessage = (message) => {
      let event;
      try { event = JSON.parse(message.data); } catch { return; }
      if (!event || typeof event !== 'object' || typeof event.event !== 'string') return;
      if (event.event === 'onEnterRoom' && event.result > 0) {
        this.attempt = 0;
        this.options.onState('open');
      }
      this.options.onEvent(event);
    };
    socket.onclose = () => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.scheduleReconnect();
    };
    socket.onerror = () => {};
  }

  scheduleReconnect() {
    if (this.stopped) return;
    if (this.attempt >= maxAttempts) {
      this.options.onState('gave-up');
      return;
    }
    this.options.onState('offline');
    const delay = backoff(this.attempt++);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), delay);
  }
}
