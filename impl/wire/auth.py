"""The cluster secret: the key of the HMAC-SHA256 that authenticates every frame of a real cluster.

Why: before frames carried a MAC, anything that could connect to a loopback port could speak for the
controller. One ``StopReplica{controller_epoch: 1000000, delete: true}`` deleted a replica and left
its broker fencing the real controller (issue 18). Now ``LocalCluster.up`` writes a fresh secret
(:func:`write_secret`, 32 random bytes, hex, file mode 0600) into the cluster directory, every process
gets the file's path (``--secret-file``) and every connection between the controllers, brokers, store
server and clients is a channel (:mod:`.channel`: a handshake of two nonces, a key per connection,
sequenced frames with tags the receiver checks before it reads a body or parses anything). A process
that cannot read the secret cannot forge a frame that is accepted, nor replay one (issue 30).

The secret is read from a file, never taken on a command line or from the environment, where other
users of the machine could read it (``ps``, ``/proc``). :func:`read_secret` refuses a file that group
or others may read, as ssh does for a private key.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

from isrcheck.specs.inputs import InputError, Kind, read_bytes

SECRET_FILE = "cluster.secret"
SECRET_BYTES = 32
MAC_SIZE = hashlib.sha256().digest_size  # 32


class SecretError(ValueError):
    """A secret file that is missing, unreadable, malformed or too widely readable."""


def mac(secret: bytes, *parts: bytes) -> bytes:
    """HMAC-SHA256 of the concatenated ``parts`` (the frame header, then its payload). One call of
    ``hmac.digest`` (OpenSSL's one-shot path) on the joined bytes: cheaper than update() per part."""
    return hmac.digest(secret, parts[0] if len(parts) == 1 else b"".join(parts), "sha256")


def verify(secret: bytes, tag: bytes, *parts: bytes) -> bool:
    """Whether ``tag`` is the MAC of ``parts``; constant-time in the tag (hmac.compare_digest)."""
    return hmac.compare_digest(tag, mac(secret, *parts))


def write_secret(directory: str | os.PathLike[str]) -> Path:
    """A fresh secret in ``directory/cluster.secret`` (mode 0600, replaced atomically); its path.

    The temporary file is created with mode 0600 from the start (``os.open``), so the secret is never
    readable by others, not even for an instant."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    path = d / SECRET_FILE
    tmp = d / f".{SECRET_FILE}.{os.getpid()}.tmp"
    try:
        tmp.unlink()
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, secrets.token_bytes(SECRET_BYTES).hex().encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return path


def read_secret(path: str | os.PathLike[str]) -> bytes:
    """The secret in ``path`` (64 hex digits); :class:`SecretError` with a one-line reason otherwise."""
    p = Path(path)
    try:
        st = p.stat()
        text = read_bytes(p, Kind.CLUSTER).decode("ascii").strip()  # regular files only: never blocks
    except InputError as e:
        raise SecretError(f"cannot read the cluster secret: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SecretError(f"cannot read the cluster secret {p}: {getattr(e, 'strerror', None) or e}") from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SecretError(f"the cluster secret {p} is accessible by group or others "
                          f"(mode {stat.S_IMODE(st.st_mode):04o}); it must be 0600")
    try:
        secret = bytes.fromhex(text)
    except ValueError:
        raise SecretError(f"the cluster secret {p} is not hex") from None
    if len(secret) != SECRET_BYTES:
        raise SecretError(f"the cluster secret {p} has {len(secret)} bytes, expected {SECRET_BYTES}")
    return secret


def find_secret(directory: str | os.PathLike[str]) -> bytes | None:
    """The secret of the cluster in ``directory``, or None when it has none (a cluster started before
    frames were authenticated); a secret file that exists but is bad is an error."""
    path = Path(directory) / SECRET_FILE
    if not path.exists():
        return None
    return read_secret(path)


__all__ = [
    "MAC_SIZE",
    "SECRET_BYTES",
    "SECRET_FILE",
    "SecretError",
    "find_secret",
    "mac",
    "read_secret",
    "verify",
    "write_secret",
]
