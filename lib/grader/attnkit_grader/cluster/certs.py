"""The cluster's certificates: one authority of its own, and a certificate for each role, made by ``attnkit cluster certs``.

Dask's plain ``tcp://`` authenticates nobody, and a Dask worker runs whatever pickled function a client
sends. The kit's cluster therefore speaks TLS only, with mutual authentication: the scheduler, every
worker and every client present a certificate signed by the cluster's authority (``ca.pem``) and accept
only peers that do; anything else is refused during the handshake. The folder holds

    ca.pem                the authority's certificate: every machine of the cluster has it
    ca-key.pem            its key: makes more certificates; keep it off the cluster's machines
    ROLE.pem, ROLE-key.pem   a certificate and its key for each of the ROLES: the scheduler's, the workers'
                          (one for all of them, readable by the workers' unprivileged user) and the client's
                          (the instructor's grading process)

Keys are written readable by their owner only (0600). Dask does not tell roles apart by certificate:
whoever holds any of the three keys is a member of the cluster (what that allows:
site/pages/en/guide/beyond.md#what-a-worker-is-trusted-with).
"""

import datetime
import ipaddress
import os
from pathlib import Path

ROLES = ("scheduler", "worker", "client")
CA = "ca.pem"
CA_KEY = "ca-key.pem"
DAYS = 365


def cert_path(folder, role):
    """(certificate, key) of ``role`` in ``folder``."""
    if role not in ROLES:
        raise ValueError(f"role: expected one of {ROLES}, got {role!r}")
    return Path(folder) / f"{role}.pem", Path(folder) / f"{role}-key.pem"


def make(folder, hosts=(), days=DAYS, force=False):
    """Write a new authority and a certificate for each role into ``folder``; return the paths written.

    ``hosts``: names and addresses of the cluster's machines, recorded in each certificate (Dask checks the
    authority, not the name, so they only document where a certificate is meant to be used).
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    if not isinstance(days, int) or isinstance(days, bool) or not 1 <= days <= 3650:
        raise ValueError(f"days: expected a whole number of days from 1 to 3650, got {days!r}")
    folder = Path(folder)
    written = [folder / CA, folder / CA_KEY] + [p for role in ROLES for p in cert_path(folder, role)]
    existing = [p.name for p in written if p.exists()]
    if existing and not force:
        raise FileExistsError(f"folder: {folder} already holds {', '.join(existing)}; pass --force to replace them "
                              f"(every machine of the cluster then needs the new ones)")
    names = [alternative_name(host) for host in ["localhost", "127.0.0.1", *hosts]]
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=days)

    def name(common):
        return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "attnkit grading cluster"),
                          x509.NameAttribute(NameOID.COMMON_NAME, common)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name("attnkit cluster authority")
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    write_key(folder / CA_KEY, ca_key, serialization)
    write_public(folder / CA, ca.public_bytes(serialization.Encoding.PEM))
    for role in ROLES:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(name(f"attnkit cluster {role}")).issuer_name(ca_name)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(start).not_valid_after(end)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                             data_encipherment=False, key_agreement=True, key_cert_sign=False,
                                             crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
                # every member both listens (scheduler, workers) and connects (all of them)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                      ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                .add_extension(x509.SubjectAlternativeName(names), critical=False)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                               critical=False)
                .sign(ca_key, hashes.SHA256()))
        cert_file, key_file = cert_path(folder, role)
        write_key(key_file, key, serialization)
        write_public(cert_file, cert.public_bytes(serialization.Encoding.PEM))
    return written


def alternative_name(host):
    """A subjectAltName entry: an IP address, else a DNS name."""
    from cryptography import x509

    if not isinstance(host, str) or not host or any(c.isspace() for c in host):
        raise ValueError(f"hosts: expected host names or addresses, got {host!r}")
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def write_public(path, data):
    """A certificate at ``path``, readable by everyone whatever the umask (a worker's uid must read it)."""
    path.write_bytes(data)
    path.chmod(0o644)


def write_key(path, key, serialization):
    """``key`` in PEM at ``path``, created readable by this user only."""
    data = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)


def check_folder(folder, role):
    """(ca.pem, certificate, key) of ``role`` in ``folder``, or FileNotFoundError naming what is missing."""
    folder = Path(folder)
    cert_file, key_file = cert_path(folder, role)
    missing = [p.name for p in (folder / CA, cert_file, key_file) if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"certs: {folder} lacks {', '.join(missing)} (make them with `attnkit cluster certs "
                                f"{folder}` and copy them to each machine)")
    return folder / CA, cert_file, key_file


def security(folder, role):
    """The :class:`distributed.Security` of ``role`` with the certificates in ``folder``: TLS required."""
    from distributed import Security

    ca, cert_file, key_file = check_folder(folder, role)
    return Security(require_encryption=True, tls_ca_file=str(ca), **{f"tls_{role}_cert": str(cert_file),
                                                                      f"tls_{role}_key": str(key_file)})
