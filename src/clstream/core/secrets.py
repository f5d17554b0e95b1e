"""Secret values that must never be written anywhere: API keys, tokens, passwords.

docs/design.md §7: a results directory is shared, copied and published, so nothing in it may
carry a credential. A server that echoes request headers in an error body would otherwise put
the API key into every stored error. The known secrets are:

* values registered with :func:`register_secret` (a model backend registers the key it reads
  from ``--api-key-env``, whatever that variable is called);
* the environment's ``OPENAI_API_KEY`` and every variable whose name ends in ``_API_KEY``,
  ``_TOKEN`` or ``_SECRET``.

Only values of at least :data:`MIN_LENGTH` characters count (a short value would match
ordinary text). :func:`scrub` replaces each occurrence by :data:`REDACTED`.

The same pass makes text storable: a lone surrogate (``"\\ud800"``, which JSON escapes and
``json.loads`` gives back, but which no UTF-8 file or SQLite text column can hold) is kept as
its visible backslash escape, so writing, exporting and reporting such text never fails.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

REDACTED = "[redacted]"
MIN_LENGTH = 8
SECRET_NAMES = ("OPENAI_API_KEY",)
SECRET_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET")

_lock = threading.Lock()
_registered: set[str] = set()


def register_secret(value: str | None) -> None:
    """Never write ``value`` anywhere (process-wide; ignored when shorter than 8 characters)."""
    if isinstance(value, str) and len(value) >= MIN_LENGTH:
        with _lock:
            _registered.add(value)


def registered_secrets() -> frozenset[str]:
    """The values given to :func:`register_secret` so far."""
    with _lock:
        return frozenset(_registered)


def is_secret_name(name: str) -> bool:
    """Whether an environment variable of this name is taken to hold a secret."""
    upper = name.upper()
    return upper in SECRET_NAMES or upper.endswith(SECRET_SUFFIXES)


def environment_secrets(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """Values of the environment's secret-named variables (see the module docstring)."""
    env = os.environ if environ is None else environ
    return frozenset(v for k, v in env.items() if is_secret_name(k) and len(v) >= MIN_LENGTH)


def known_secrets(extra: Iterable[str] = ()) -> frozenset[str]:
    """Registered, environment and ``extra`` secrets of at least 8 characters."""
    values = {v for v in extra if isinstance(v, str) and len(v) >= MIN_LENGTH}
    return frozenset(values | registered_secrets() | environment_secrets())


def storable(text: str) -> str:
    """``text`` with any lone surrogate kept as its backslash escape (valid UTF-8 after)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


# How ``json.dumps`` (ASCII output) writes any surrogate, paired or lone: the one thing in its
# text that may need :func:`storable`.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
# Characters ``json.dumps`` writes as they are: a secret made only of these appears verbatim
# in the JSON text of any string that holds it.
_VERBATIM = frozenset(chr(c) for c in range(0x20, 0x7F)) - {'"', "\\"}


class Scrubber:
    """Replaces a fixed set of secret values in strings, and makes strings storable."""

    def __init__(self, secrets: Iterable[str] = ()):
        self.secrets = frozenset(s for s in secrets if isinstance(s, str) and len(s) >= MIN_LENGTH)
        ordered = sorted(self.secrets, key=lambda s: (-len(s), s))  # longest first
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self._verbatim = all(set(s) <= _VERBATIM for s in self.secrets)

    def text(self, value: str) -> str:
        """One string, scrubbed and storable."""
        value = storable(value)
        if self._pattern is not None:
            value = self._pattern.sub(REDACTED, value)
        return value

    def value(self, obj: Any) -> Any:
        """A JSON-like value with every string in it (keys included, at any depth) scrubbed."""
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {self.text(k) if isinstance(k, str) else k: self.value(v)
                    for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return [self.value(v) for v in obj]
        return obj


    def json(self, obj: Any, sort_keys: bool = False) -> str:
        """``json.dumps(self.value(obj), sort_keys=sort_keys)``, the same text, without
        walking ``obj`` in Python where its JSON text shows nothing to change: no surrogate
        escape (so every string is storable as it is) and no secret (looked for in the text
        itself when every secret is written verbatim by ``json.dumps``). A call is written
        per stored record and model call, so this is on every request's path."""
        text = json.dumps(obj, sort_keys=sort_keys)
        if _SURROGATE_ESCAPE.search(text) is None and (
                self._pattern is None or self._verbatim and self._pattern.search(text) is None):
            return text
        return json.dumps(self.value(obj), sort_keys=sort_keys)


def scrub(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with every known secret (and ``extra``) replaced by ``[redacted]``."""
    return Scrubber(known_secrets(extra)).text(text)


def redacted_url(url: str) -> str:
    """The URL without any user:password part: what names an endpoint in errors, in a run's
    description and in ``clstream check``, so credentials in a URL are never shown or stored."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
