"""An xDS-enabled grpcio server process: ``grpc.server(..., xds=True)`` with tagged services.

``python -m tests.e2e.grpc_apps.xds_server --port P --tag T`` with
``GRPC_XDS_BOOTSTRAP`` set (its ``server_listener_resource_name_template`` names the
Listener the server asks for). It serves the Health service and the Tag method of
:mod:`.backends` on 127.0.0.1:P once pilothouse sends that Listener, prints one JSON
line when ``start()`` returned, and stops when its stdin closes.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent import futures
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from tests.e2e.grpc_apps.backends import BACKEND_HEADER, tag_handler


class TaggedHealth(health.HealthServicer):  # type: ignore[misc]
    """The synchronous Health service, its Check answers naming the server."""

    def __init__(self, tag: str) -> None:
        super().__init__()
        self.tag = tag

    def Check(self, request: Any, context: Any) -> Any:
        context.send_initial_metadata(((BACKEND_HEADER, self.tag),))
        return super().Check(request, context)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tag", required=True)
    args = parser.parse_args()
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=4),
        options=[("grpc.so_reuseport", 0)],
        xds=True,
    )
    server.add_generic_rpc_handlers([tag_handler(args.tag)])
    servicer = TaggedHealth(args.tag)
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    credentials = grpc.xds_server_credentials(grpc.insecure_server_credentials())
    bound = server.add_secure_port(f"127.0.0.1:{args.port}", credentials)
    server.start()
    sys.stdout.write(json.dumps({"started": True, "bound": bound}) + "\n")
    sys.stdout.flush()
    sys.stdin.read()
    server.stop(0)


if __name__ == "__main__":
    main()
