"""ProxyConfig analysis: selectors that select nothing (IST0127), two ProxyConfigs for
one workload (PH0131) and two without a selector in one namespace (PH0132), each naming
the one istiod applies (:mod:`pilothouse.kinds.proxy_config`'s choice)."""

from __future__ import annotations

from pilothouse.config.load import Loader
from pilothouse.kinds.proxy_config import effective_settings
from pilothouse.kinds.table import SCHEMAS
from tests.unit.analysis.mesh import findings

ANALYZER = "proxyconfig.SelectorAnalyzer"


def proxy_config(name: str, selector: str | None, concurrency: int = 2) -> str:
    chosen = f"  selector: {{matchLabels: {{{selector}}}}}\n" if selector is not None else ""
    return (
        "apiVersion: networking.istio.io/v1beta1\nkind: ProxyConfig\n"
        f"metadata: {{name: {name}, namespace: shop}}\n"
        f"spec:\n{chosen}  concurrency: {concurrency}\n---\n"
    )


def test_two_proxy_configs_for_one_workload_name_the_one_that_applies() -> None:
    text = proxy_config("two", "app: reviews", 2) + proxy_config("four", "version: v1", 4)
    found = findings(text, ANALYZER)
    tail = (
        ' The ProxyConfigs [four two] in namespace "shop" select the same workload'
        ' "reviews-v1": only four applies to it (the oldest, or the first by name when their'
        " ages are not known)."
    )
    assert found == [
        "Warning [PH0131] (ProxyConfig shop/four mesh.yaml:41)" + tail,
        "Warning [PH0131] (ProxyConfig shop/two mesh.yaml:34)" + tail,
    ]
    # the one named is the one whose settings the workload gets
    loaded = Loader(SCHEMAS, default_namespace="shop").load_text(text, "mesh.yaml").configs
    labels = {"app": "reviews", "version": "v1"}
    assert effective_settings(loaded, "shop", labels, "istio-system").concurrency == 4
    # selectors that select different workloads do not conflict
    apart = proxy_config("two", "app: reviews") + proxy_config("four", "app: details")
    assert findings(apart, ANALYZER) == []


def test_selectors_that_select_nothing() -> None:
    text = proxy_config("nobody", "app: nobody") + proxy_config("empty", "")
    assert findings(text, ANALYZER) == [
        "Warning [IST0127] (ProxyConfig shop/empty mesh.yaml:41) No matching workloads for"
        " this resource with the following labels:  (an empty selector selects nothing)",
        "Warning [IST0127] (ProxyConfig shop/nobody mesh.yaml:34) No matching workloads for"
        " this resource with the following labels: app=nobody",
    ]
    assert findings(proxy_config("reviews", "app: reviews"), ANALYZER) == []
    # without workloads in the set, selectors are not judged
    assert findings(proxy_config("nobody", "app: nobody"), ANALYZER, with_services=False) == []


def test_two_without_a_selector_in_one_namespace() -> None:
    text = proxy_config("threads", None) + proxy_config("defaults", None)
    assert findings(text, ANALYZER) == [
        "Warning [PH0132] (ProxyConfig shop/threads mesh.yaml:34) The ProxyConfigs [defaults"
        ' threads] in namespace "shop" have no selector: only defaults applies to the'
        " namespace (the oldest, or the first by name when their ages are not known)."
    ]
    assert findings(proxy_config("threads", None), ANALYZER) == []
