// @ts-check
// The WebSocket stream of one session (API.md, WebSocket stream).
//
// Delivers every message exactly once and in order: messages with seq <= the last one
// seen are dropped, and every (re)connect asks for `after=<last seq seen>`. A drop or a
// server restart is followed by a quiet reconnect with backoff; the page only hears about
// it (onConnection) so it can show a small indicator after a while.

import { askToken } from "./api.js";

const CLOSE_UNAUTHORIZED = 4401;
const CLOSE_FORBIDDEN = 4403;
const CLOSE_NOT_FOUND = 4404;
const BACKOFF_MS = [150, 400, 800, 1500, 3000, 5000];

export class SessionStream {
  /**
   * handlers: onHello(session, lastSeq, {first}), onMessage(message), onLive({first}),
   * onConnection(state: "connecting" | "live" | "down"), onFatal(text)
   */
  constructor(sessionId, handlers) {
    this.sessionId = sessionId;
    this.handlers = handlers;
    this.lastSeq = 0;
    this.socket = null;
    this.closed = false;
    this.attempt = 0;
    this.timer = null;
    this.connectedOnce = false;
    this.wentLive = false;
    this.pending = new Map();
    this.nextRef = 1;
  }

  start() {
    this.connect();
    window.addEventListener("online", this.onOnline);
  }

  stop() {
    this.closed = true;
    clearTimeout(this.timer);
    window.removeEventListener("online", this.onOnline);
    for (const { reject } of this.pending.values()) reject(new Error("The view was closed."));
    this.pending.clear();
    if (this.socket) {
      this.socket.onclose = null;
      this.socket.close(1000, "view closed");
      this.socket = null;
    }
  }

  /** Forget what was seen (after a rewind) and replay the whole history. */
  restart() {
    this.lastSeq = 0;
    this.wentLive = false;
    this.connectedOnce = false;
    if (this.socket) {
      this.socket.onclose = null;
      this.socket.close(1000, "restart");
      this.socket = null;
    }
    clearTimeout(this.timer);
    this.connect();
  }

  onOnline = () => {
    if (!this.socket && !this.closed) {
      clearTimeout(this.timer);
      this.connect();
    }
  };

  url() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const params = new URLSearchParams({ after: String(this.lastSeq) });
    return `${scheme}//${location.host}/ws/sessions/${encodeURIComponent(this.sessionId)}?${params}`;
  }

  connect() {
    if (this.closed) return;
    this.handlers.onConnection?.("connecting");
    let socket;
    try {
      socket = new WebSocket(this.url());
    } catch {
      this.scheduleReconnect();
      return;
    }
    this.socket = socket;
    this.wentLive = false;
    socket.onmessage = (event) => this.receive(event.data);
    socket.onclose = (event) => this.onClose(event);
  }

  receive(data) {
    let frame;
    try {
      frame = JSON.parse(data);
    } catch {
      return;
    }
    switch (frame.type) {
      case "hello":
        this.attempt = 0;
        this.handlers.onHello?.(frame.session, frame.lastSeq, { first: !this.connectedOnce });
        break;
      case "message": {
        const seq = frame.message?.seq;
        if (typeof seq !== "number" || seq <= this.lastSeq) return; // seen already
        this.lastSeq = seq;
        this.handlers.onMessage?.(frame.message);
        break;
      }
      case "live":
        this.wentLive = true;
        this.handlers.onLive?.({ first: !this.connectedOnce });
        this.connectedOnce = true;
        this.handlers.onConnection?.("live");
        break;
      case "ack":
      case "error": {
        const waiter = this.pending.get(frame.ref);
        if (!waiter) return;
        this.pending.delete(frame.ref);
        if (frame.type === "ack") waiter.resolve(frame);
        else waiter.reject(Object.assign(new Error(frame.error?.message || "refused"), frame.error || {}));
        break;
      }
      default:
        break;
    }
  }

  async onClose(event) {
    this.socket = null;
    for (const { reject } of this.pending.values()) reject(new Error("The connection dropped."));
    this.pending.clear();
    if (this.closed) return;
    if (event.code === CLOSE_NOT_FOUND) {
      this.handlers.onFatal?.("This session does not exist (or was removed).");
      return;
    }
    if (event.code === CLOSE_FORBIDDEN) {
      this.handlers.onFatal?.("The server refused this page's origin (ALLOWED_ORIGINS).");
      return;
    }
    if (event.code === CLOSE_UNAUTHORIZED) {
      try {
        await askToken(false);  // signed out, or the token was revoked: sign in again
      } catch {
        this.handlers.onFatal?.("Sign in to see this session.");
        return;
      }
      this.connect();
      return;
    }
    this.handlers.onConnection?.("down");
    this.scheduleReconnect();
  }

  scheduleReconnect() {
    if (this.closed) return;
    const delay = BACKOFF_MS[Math.min(this.attempt, BACKOFF_MS.length - 1)];
    this.attempt += 1;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), delay);
  }

  /** Send a client command; resolves on its ack, rejects on its error. */
  send(command) {
    const socket = this.socket;
    if (!socket || socket.readyState !== WebSocket.OPEN) {
      return Promise.reject(new Error("Not connected."));
    }
    const ref = `c${this.nextRef++}`;
    return new Promise((resolve, reject) => {
      this.pending.set(ref, { resolve, reject });
      socket.send(JSON.stringify({ ...command, id: ref }));
    });
  }
}
