"""Test PKI made at run time (the `cryptography` package): two CAs, a server certificate and client certificates."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Pki:
    ca: Path  # the CA that signed the server and the good client
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_client_cert: Path  # signed by another CA
    other_client_key: Path


def _key():
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _cert(subject: str, key, issuer_name, issuer_key, *, ca: bool, usage=None, san=None):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer_name or name)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))  # fmt: skip
    if ca:
        builder = builder.add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                      content_commitment=False, key_encipherment=False,
                                                      data_encipherment=False, key_agreement=False,
                                                      encipher_only=False, decipher_only=False), critical=True)  # fmt: skip
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if san is not None:
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return builder.sign(issuer_key or key, hashes.SHA256())


def _write(folder: Path, name: str, cert, key) -> tuple[Path, Path]:
    from cryptography.hazmat.primitives import serialization

    cert_path, key_path = folder / f"{name}.pem", folder / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))  # fmt: skip
    return cert_path, key_path


def make_pki(folder: Path) -> Pki:
    from cryptography import x509
    from cryptography.x509.oid import ExtendedKeyUsageOID

    folder.mkdir(parents=True, exist_ok=True)
    ca_key, other_ca_key = _key(), _key()
    ca = _cert("gateway test CA", ca_key, None, None, ca=True)
    other_ca = _cert("another CA", other_ca_key, None, None, ca=True)
    ca_path, _ = _write(folder, "ca", ca, ca_key)
    san = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    server_key, client_key, other_key = _key(), _key(), _key()
    server = _cert("localhost", server_key, ca.subject, ca_key, ca=False, usage=ExtendedKeyUsageOID.SERVER_AUTH, san=san)
    client = _cert("client", client_key, ca.subject, ca_key, ca=False, usage=ExtendedKeyUsageOID.CLIENT_AUTH)
    other = _cert("intruder", other_key, other_ca.subject, other_ca_key, ca=False,
                  usage=ExtendedKeyUsageOID.CLIENT_AUTH)  # fmt: skip
    server_paths = _write(folder, "server", server, server_key)
    client_paths = _write(folder, "client", client, client_key)
    other_paths = _write(folder, "other-client", other, other_key)
    return Pki(ca_path, *server_paths, *client_paths, *other_paths)


def client_context(pki: Pki, cert: Path | None = None, key: Path | None = None):
    """A client SSL context trusting the test CA, presenting `cert` when given."""
    import ssl

    context = ssl.create_default_context(cafile=str(pki.ca))
    if cert is not None:
        context.load_cert_chain(str(cert), str(key))
    return context
