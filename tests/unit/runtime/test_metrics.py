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
