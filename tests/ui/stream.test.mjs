// node:test for server/web/static/stream.js: every message exactly once and in order,
// reconnects ask for after=<last seq seen>, commands resolve on their ack, 4404 is fatal.
// The browser's globals it uses are stood in for here (a fake WebSocket among them).
import assert from "node:assert/strict";
import { test } from "node:test";

const sockets = [];
class FakeSocket {
  static OPEN = 1;
  constructor(url) {
    this.url = url;
    this.readyState = FakeSocket.OPEN;
    this.sent = [];
    sockets.push(this);
  }
  send(text) { this.sent.push(JSON.parse(text)); }
  close() { this.readyState = 3; }
  frame(value) { this.onmessage({ data: JSON.stringify(value) }); }
}
const storage = new Map();
Object.assign(globalThis, {
  WebSocket: FakeSocket,
  window: { addEventListener() {}, removeEventListener() {} },
  location: { protocol: "http:", host: "example.test" },
  sessionStorage: { getItem: (k) => storage.get(k) ?? null, setItem: (k, v) => storage.set(k, v) },
});

const { SessionStream } = await import("../../server/web/static/stream.js");

const message = (seq) => ({ type: "message", message: { seq, content: { type: "text" } } });

function open() {
  const seen = [];
  const events = [];
  const stream = new SessionStream("s1", {
    onHello: (_s, lastSeq, { first }) => events.push(["hello", lastSeq, first]),
    onMessage: (m) => seen.push(m.seq),
    onLive: ({ first }) => events.push(["live", first]),
    onConnection: (state) => events.push(["state", state]),
    onFatal: (text) => events.push(["fatal", text]),
  });
  stream.connect();
  return { stream, seen, events, socket: sockets.at(-1) };
}

test("messages are delivered once, in order; replays of seen ones are dropped", () => {
  const { stream, seen, socket } = open();
  assert.equal(socket.url, "ws://example.test/ws/sessions/s1?after=0");
  socket.frame({ type: "hello", session: {}, lastSeq: 3 });
  for (const seq of [1, 2, 2, 1, 3]) socket.frame(message(seq));
  socket.frame({ type: "live" });
  assert.deepEqual(seen, [1, 2, 3]);
  assert.equal(stream.lastSeq, 3);
  stream.stop();
});

test("a reconnect asks for what came after the last message seen", () => {
  const { stream, socket, events } = open();
  socket.frame(message(1));
  socket.frame(message(2));
  socket.onclose({ code: 4008 }); // fell behind: closed by the server
  assert.deepEqual(events.at(-1), ["state", "down"]);
  stream.connect(); // what the backoff timer does
  assert.equal(sockets.at(-1).url, "ws://example.test/ws/sessions/s1?after=2");
  stream.stop();
});

test("a command resolves on its ack and rejects on its error", async () => {
  const { stream, socket } = open();
  const acked = stream.send({ type: "cancel" });
  const refused = stream.send({ type: "prompt", text: "x" });
  const [first, second] = socket.sent;
  assert.equal(first.type, "cancel");
  socket.frame({ type: "ack", ref: first.id });
  socket.frame({ type: "error", ref: second.id, error: { code: "turn_in_progress", message: "busy" } });
  assert.equal((await acked).ref, first.id);
  await assert.rejects(refused, (err) => err.code === "turn_in_progress" && err.message === "busy");
  stream.stop();
});

test("an unknown session (4404) is fatal: no reconnect", async () => {
  const { stream, socket, events } = open();
  const before = sockets.length;
  await socket.onclose({ code: 4404 });
  assert.equal(events.at(-1)[0], "fatal");
  assert.equal(sockets.length, before);
  stream.stop();
});

test("no token travels on the URL: the browser's sign-in cookie goes with the handshake", () => {
  storage.set("agent-sessions.token", "sekret");  // left by an older page: never sent
  const { stream, socket } = open();
  assert.equal(socket.url, "ws://example.test/ws/sessions/s1?after=0");
  storage.clear();
  stream.stop();
});
