"""HTTPS and mutual TLS: the server's SSL context from vLLM's flags (--ssl-keyfile, --ssl-certfile, --ssl-ca-certs, --ssl-cert-reqs)."""

from __future__ import annotations

import ssl
from dataclasses import dataclass

CERT_REQS = {"none": ssl.CERT_NONE, "optional": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


def parse_cert_reqs(value: str) -> ssl.VerifyMode:
    """none | optional | required, or vLLM's integers 0 | 1 | 2."""
    text = str(value).strip().lower()
    if text.isdigit() and int(text) in (0, 1, 2):
        return ssl.VerifyMode(int(text))
    if text not in CERT_REQS:
        raise ValueError(f"--ssl-cert-reqs must be none, optional or required (or 0, 1, 2), got {value!r}")
    return CERT_REQS[text]


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """Built by the CLI; `server_context()` is called once before the server starts."""

    keyfile: str | None = None
    certfile: str | None = None
    ca_certs: str | None = None
    cert_reqs: ssl.VerifyMode = ssl.CERT_NONE

    @property
    def enabled(self) -> bool:
        return self.certfile is not None

    def validate(self) -> None:
        """Raises ValueError naming the flag that is missing or contradicts another."""
        if bool(self.keyfile) != bool(self.certfile):
            raise ValueError("--ssl-keyfile and --ssl-certfile go together")
        if not self.enabled and (self.ca_certs or self.cert_reqs != ssl.CERT_NONE):
            raise ValueError("--ssl-ca-certs and --ssl-cert-reqs need --ssl-certfile and --ssl-keyfile")
        if self.cert_reqs != ssl.CERT_NONE and not self.ca_certs:
            raise ValueError("--ssl-cert-reqs optional/required needs --ssl-ca-certs to check client certificates")

    def server_context(self) -> ssl.SSLContext | None:
        """The context for the listening socket (None without TLS); ValueError for unreadable files."""
        self.validate()
        if not self.enabled:
            return None
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            context.load_cert_chain(self.certfile, self.keyfile)
            if self.ca_certs:
                context.load_verify_locations(cafile=self.ca_certs)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"TLS: cannot load the certificates ({exc})") from None
        context.verify_mode = self.cert_reqs
        return context
