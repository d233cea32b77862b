"""Why a try got no answer, in the one line its manifest row keeps, and whether another try can
do better: network errors that come back the same when asked again fail a fetch at once, their
tries left unspent (a host name that does not exist, a TLS handshake the server refuses, a URL
no request can name); others may go better, and are tried again.
"""

from __future__ import annotations

import socket
import ssl

import aiohttp

from archiver.errors import FetchError, NoSuchHost

HEAD_CUT_SHORT = (
    "the connection closed within the answer's head, which over https Chromium takes for no answer"
)
"""Why a fetch whose head the close cut short failed (over http that head is the answer:
answer_parser.py); aiohttp's own message is a dump of the head it read."""
UNASKED_UPGRADE = "HTTP 101 Switching Protocols to a request that asked for no upgrade: not an HTTP answer"


def handshake_refused(exc: BaseException) -> bool:
    """True if ``exc`` is a TLS handshake the server refused or could not speak (an http port, no
    protocol version or cipher in common: an SSL error of the protocol), as it will again; not a
    connection that ended half way through it (EOF, a system call's error), which may go better."""
    if not isinstance(exc, aiohttp.ClientConnectorSSLError):
        return False
    cause = exc.os_error
    transient = (ssl.SSLEOFError, ssl.SSLSyscallError, ssl.SSLZeroReturnError)
    return isinstance(cause, ssl.SSLError) and not isinstance(cause, transient)


NAME_UNKNOWN = frozenset(
    code for code in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", None)) if code is not None
)
"""getaddrinfo's errors for a name that does not exist (NXDOMAIN) or has no address: the resolver
says the same when asked again, as Chromium fails it (ERR_NAME_NOT_RESOLVED). A resolver that
could not answer for now (EAI_AGAIN: a server out of reach, a time-out) is no such answer."""


def name_unknown(exc: BaseException) -> bool:
    """True if ``exc`` is the resolver's answer that the host name has no address (NAME_UNKNOWN)."""
    if not isinstance(exc, aiohttp.ClientConnectorDNSError):
        return False
    return isinstance(exc.os_error, socket.gaierror) and exc.os_error.errno in NAME_UNKNOWN


def no_answer(url: str, exc: aiohttp.ClientError | OSError | ValueError) -> FetchError:
    """The failure of a try of ``url`` that ``exc`` kept from any answer: retryable unless it comes
    back the same when asked again (module docstring)."""
    # A URL no request can name (aiohttp's InvalidURL, a host IDNA encodes to no name:
    # ValueErrors), a host name that does not exist, a certificate that does not verify
    # (a ValueError too) and a TLS handshake the server refuses come back the same when
    # asked again: failures for good, their tries left unspent.
    final = isinstance(exc, ValueError) or handshake_refused(exc) or name_unknown(exc)
    if isinstance(exc, aiohttp.ServerDisconnectedError) and not isinstance(exc.message, str):
        return FetchError(url, HEAD_CUT_SHORT)  # exc.message: the half-read head
    why = f"{type(exc).__name__}: {exc}".rstrip(": ")
    if name_unknown(exc) or isinstance(exc, UnicodeError):  # UnicodeError: IDNA names it nothing
        return NoSuchHost(url, why)
    return FetchError(url, why, retryable=not final)
