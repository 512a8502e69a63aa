"""Real public keys for tests that relay key sets (pilothouse relays only keys that pass
its checks, so a made-up modulus such as ``"n": "xyz"`` no longer reaches a proxy)."""

from __future__ import annotations

import json
from typing import Final

RSA_2048: Final = {
    "kty": "RSA",
    "n": (
        "xYbUqhzUbFFMSoyrO5TrOufj2GW9H-NnI715HQkyyOtoJf8Fhr0Bi3yc0ZG2YUeXtbmNVjzhbSP_r4Bw"
        "EmDT4ZkUjOl2A4i9fylW5NQEsQ9qNbg2hcDJGZuSw4qvPP8KeP_evpTS398w0z3tuoqHDmHjiypDICV3"
        "Rb2qmsinyVljmPkVzEKpNtQjfbWGo-r6JoC4xZ4KZewm31BJR2hneYCjilNlejXFoyr-n9vaXNQ3FamZ"
        "JqQTmv2AcgSpqQ2NCQEbSePVUhLp5f7PpVVpljMYOhQuxm8MmTY86DqlrbOYZttwJlB222ZFCJRsiSH6"
        "FVLkzVyGvl7oe_tdrvkLUw"
    ),
    "e": "AQAB",
}
"""The public half of an RSA 2048 key made once for these tests (its private half was
thrown away)."""

RSA_2048_JWKS: Final = json.dumps({"keys": [RSA_2048]}, separators=(",", ":"))
"""A key set of that one key, as a RequestAuthentication's inline ``jwks``."""
