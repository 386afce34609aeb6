"""The Prometheus text: histogram buckets add up, and series are kept from who may not see them."""

from __future__ import annotations

from memhubd.runtime.metrics import Histogram, Metrics


def sample(lines: list[str], prefix: str) -> float:
    (line,) = [line for line in lines if line.startswith(prefix)]
    return float(line.rsplit(" ", 1)[1])


def test_a_histograms_buckets_are_cumulative_and_inf_is_the_count() -> None:
    histogram = Histogram("t_seconds", "test", ("route",))
    for value in (0.0001, 0.003, 0.2, 7.5, 42.0):
        histogram.observe("r", value=value)
    lines = histogram.render()
    assert sample(lines, 't_seconds_bucket{route="r",le="0.0005"}') == 1
    assert sample(lines, 't_seconds_bucket{route="r",le="0.005"}') == 2
    assert sample(lines, 't_seconds_bucket{route="r",le="10"}') == 4
    assert sample(lines, 't_seconds_bucket{route="r",le="+Inf"}') == 5
    assert sample(lines, 't_seconds_count{route="r"}') == 5
    assert abs(sample(lines, 't_seconds_sum{route="r"}') - 49.7031) < 1e-9


def test_request_series_are_left_out_on_request() -> None:
    metrics = Metrics()
    metrics.requests.inc("query", "200")
    metrics.request_seconds.observe("query", value=0.01)
    metrics.generation.set("ws", value=3)
    metrics.declarations.set("ws", value=10)
    full = metrics.render()
    assert "memhub_requests_total{" in full and "memhub_request_duration_seconds_" in full
    assert "memhub_declarations{" in full
    narrow = metrics.render(with_requests=False, with_declarations=False)
    assert "memhub_requests" not in narrow and "memhub_request_duration" not in narrow
    assert "memhub_declarations" not in narrow
    assert 'memhub_generation{workspace="ws"} 3' in narrow


def test_a_forgotten_workspace_leaves_no_series() -> None:
    metrics = Metrics()
    for name in ("kept", "gone"):
        metrics.reloads.inc(name, "ok")
        metrics.reload_seconds.observe(name, value=0.2)
        metrics.generation.set(name, value=1)
        metrics.declarations.set(name, value=5)
        metrics.degraded.set(name, value=0)
    metrics.forget_workspace("gone")
    text = metrics.render()
    assert 'workspace="gone"' not in text
    assert 'memhub_reloads_total{workspace="kept",result="ok"} 1' in text
    assert 'memhub_reload_duration_seconds_count{workspace="kept"} 1' in text
    assert 'memhub_generation{workspace="kept"} 1' in text
