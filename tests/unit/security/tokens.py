"""A test token issuer: its own EC key, a JWKS file, Kubernetes-style service account tokens."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec

ISSUER = "https://kubernetes.default.svc.cluster.local"


class Issuer:
    def __init__(self, name: str = ISSUER, kid: str = "test-key") -> None:
        self.name = name
        self.kid = kid
        self.key = ec.generate_private_key(ec.SECP256R1())

    def jwks(self) -> dict[str, Any]:
        public = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(self.key.public_key()))
        public.update(kid=self.kid, use="sig", alg="ES256")
        return {"keys": [public]}

    def write_jwks(self, path: Path) -> Path:
        path.write_text(json.dumps(self.jwks()))
        return path

    def token(
        self,
        namespace: str,
        account: str,
        *,
        audience: str | list[str] = "istio-ca",
        lifetime: float = 3600,
        **claims: Any,
    ) -> str:
        now = int(time.time())
        body: dict[str, Any] = {
            "iss": self.name,
            "sub": f"system:serviceaccount:{namespace}:{account}",
            "aud": audience,
            "iat": now,
            "exp": now + int(lifetime),
            **claims,
        }
        return jwt.encode(body, self.key, algorithm="ES256", headers={"kid": self.kid})
