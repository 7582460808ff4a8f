"""The only ways out of a sandbox with its own network: run first inside it as
``python -I -S egress_forwarder.py PORT SOCKET [PORT SOCKET ...] -- COMMAND...``, it
listens on ``127.0.0.1:PORT`` of the sandbox's own network namespace for each pair, forks
a relay that copies each connection to the Unix socket ``SOCKET`` (bound in by
bubblewrap), and becomes ``COMMAND`` (so the agent stays bubblewrap's child and keeps its
pipes). The sockets are the server's: its egress proxy (``proxy``) and the session's
client-tools MCP server (``none`` and ``proxy``).

The relay knows nothing of HTTP: the server's side reads each request and decides (the
proxy allows or refuses the host and never looks inside TLS; the MCP relay lets through
only the session's own MCP path). It holds none of the agent's
pipes, and it ends with the agent: bubblewrap's init (PID 1 of the sandbox) exits when
the agent does, and the kernel then kills every process of the PID namespace.

Only built-in modules (``_socket``, ``_thread``): this runs before every sandboxed
agent under ``proxy``, and ``socket``/``threading`` would add tens of milliseconds.
"""

import _socket
import _thread
import os
import sys

CHUNK = 65536
SHUT_RD, SHUT_WR = 0, 1


def _pipe(source: _socket.socket, target: _socket.socket, done: _thread.LockType | None) -> None:
    try:
        while True:
            data = source.recv(CHUNK)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    for sock, how in ((target, SHUT_WR), (source, SHUT_RD)):
        try:
            sock.shutdown(how)
        except OSError:
            pass
    if done is not None:
        done.release()


def _relay(fd: int, path: str) -> None:
    client = _socket.socket(fileno=fd)
    upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = _thread.allocate_lock()
    back.acquire()
    _thread.start_new_thread(_pipe, (upstream, client, back))
    _pipe(client, upstream, None)
    back.acquire()  # the other direction is done too
    client.close()
    upstream.close()


def serve(listener: _socket.socket, path: str) -> None:
    while True:
        fd, _ = listener._accept()  # type: ignore[attr-defined] # the C socket's accept
        _thread.start_new_thread(_relay, (fd, path))


def main(argv: list[str]) -> None:
    split = argv.index("--")
    pairs, command = argv[1:split], argv[split + 1 :]
    listeners: list[tuple[_socket.socket, str]] = []
    for index in range(0, len(pairs) - 1, 2):
        listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", int(pairs[index])))
        listener.listen(64)
        listeners.append((listener, pairs[index + 1]))
    if os.fork() == 0:  # the relay; the parent becomes the command
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # never hold the agent's pipes open
            os.dup2(null, fd)
        os.close(null)
        try:
            for listener, path in listeners[1:]:
                _thread.start_new_thread(serve, (listener, path))
            serve(*listeners[0])
        finally:
            os._exit(0)
    for listener, _ in listeners:
        listener.close()
    try:
        os.execvp(command[0], command)  # noqa: S606 - the agent's own command
    except OSError as exc:
        sys.stderr.write(f"cannot run {command[0]!r}: {exc.strerror}\n")
        os._exit(127)


if __name__ == "__main__":
    main(sys.argv)
