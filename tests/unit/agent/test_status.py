"""The agent's ``/healthz/ready`` rule: the first failing check's reason, until every
check passes once (then ready is kept, as istio-agent caches it)."""

from __future__ import annotations

from pilothouse.agent.status import StatusServer


async def test_the_first_failing_reason_then_ready_for_good() -> None:
    answers: list[str | None] = ["no workload certificate yet"]

    async def certificate() -> str | None:
        return answers[0]

    async def envoy() -> str | None:
        return "config not received from pilothouse (is it running?)"

    status = StatusServer("127.0.0.1", 0, [certificate, envoy])
    assert await status.readiness() == "no workload certificate yet"
    answers[0] = None
    assert await status.readiness() == "config not received from pilothouse (is it running?)"
    status.checks = [certificate]
    assert await status.readiness() is None
    answers[0] = "no workload certificate yet"  # after the first success, ready is cached
    assert await status.readiness() is None
