"""EKS extension for moto 5.2.5: a cluster endpoint that leads somewhere.

moto gives every cluster a made-up https://....eks.amazonaws.com endpoint and
1400 random characters as its CA, so the bot's production path
(eks:DescribeCluster, then the endpoint with an EKS token) reaches nothing.
A world points the cluster at its local API server through the admin
endpoint; DescribeCluster then returns that URL and, as certificateAuthority,
a real self-signed CA certificate (base64 PEM, as EKS gives it), so a client
that loads the CA into its TLS roots accepts it. An http:// endpoint never
uses it.
"""

from __future__ import annotations

import base64
import datetime
import functools
from typing import Any

from moto.eks.models import eks_backends


@functools.lru_cache(maxsize=1)
def certificate_authority() -> str:
    """One self-signed CA per moto process, base64 of its PEM."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return base64.b64encode(certificate.public_bytes(serialization.Encoding.PEM)).decode()


def set_endpoint(name: str, endpoint: str, account: str | None = None, region: str | None = None) -> list[str]:
    """Points every cluster called `name` (in the given account and region, or
    any that exists) at `endpoint`; returns their ARNs."""
    changed = []
    for account_id, regions in list(eks_backends.items()):
        if account and account_id != str(account):
            continue
        for region_name, backend in list(regions.items()):
            cluster: Any = backend.clusters.get(name)
            if cluster is None or (region and region_name != region):
                continue
            cluster.endpoint = endpoint
            cluster.certificate_authority = {"data": certificate_authority()}
            changed.append(cluster.arn)
    if not changed:
        raise ValueError(f"eks-endpoint: no EKS cluster named {name!r}")
    return changed
