"""The only way out of a ``proxy`` sandbox: run first inside it as ``python -I -S
egress_forwarder.py PORT SOCKET -- COMMAND...``, it listens on ``127.0.0.1:PORT`` of the
sandbox's own network namespace, forks a relay that copies each connection to the
server's egress proxy at the Unix socket ``SOCKET`` (bound in by bubblewrap), and
becomes ``COMMAND`` (so the agent stays bubblewrap's child and keeps its pipes).

The relay knows nothing of HTTP: the proxy on the server's side reads the request,
allows or refuses the host, and never looks inside TLS. The relay dies with the command
(parent-death signal) and holds none of its pipes. Standard library only.
"""

import os
import socket
import sys
import threading

PR_SET_PDEATHSIG = 1
SIGKILL = 9
CHUNK = 65536


def _pipe(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(CHUNK):
            target.sendall(data)
    except OSError:
        pass
    finally:
        for sock, how in ((target, socket.SHUT_WR), (source, socket.SHUT_RD)):
            try:
                sock.shutdown(how)
            except OSError:
                pass


def _relay(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
    back.start()
    _pipe(client, upstream)
    back.join()
    client.close()
    upstream.close()


def serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_relay, args=(client, path), daemon=True).start()


def main(argv: list[str]) -> None:
    port, path, command = int(argv[1]), argv[2], argv[4:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    if os.fork() == 0:  # the relay; the parent becomes the command
        import ctypes  # noqa: PLC0415 - only the relay needs it

        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # never hold the agent's pipes open
            os.dup2(null, fd)
        os.close(null)
        try:
            serve(listener, path)
        finally:
            os._exit(0)
    listener.close()
    try:
        os.execvp(command[0], command)  # noqa: S606 - the agent's own command
    except OSError as exc:
        sys.stderr.write(f"cannot run {command[0]!r}: {exc.strerror}\n")
        os._exit(127)


if __name__ == "__main__":
    main(sys.argv)
