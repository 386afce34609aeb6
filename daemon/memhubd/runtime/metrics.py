"""A few Prometheus metrics, exposed in the text format at /metrics.

Counters, gauges and one histogram kind are all memhub needs, so this is a
small self-contained registry rather than a dependency. Thread-safe. It renders
what it is told a caller may see; it does not decide who may see what.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Iterable

# Decides, for one series' label values, whether the caller may see that series.
SeriesFilter = Callable[[tuple[str, ...]], bool]

_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def _labels(names: tuple[str, ...], values: tuple[str, ...]) -> str:
    if not names:
        return ""
    parts = []
    for name, value in zip(names, values, strict=True):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        parts.append(f'{name}="{escaped}"')
    return "{" + ",".join(parts) + "}"


class _Metric:
    kind = ""

    def __init__(self, name: str, help_text: str, labels: Iterable[str] = ()) -> None:
        self.name = name
        self.help = help_text
        self.label_names = tuple(labels)
        self._lock = threading.Lock()

    def header(self) -> list[str]:
        return [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} {self.kind}"]

    def series_filter(self, workspace_visible: Callable[[str], bool] | None) -> SeriesFilter:
        """Keeps every series, or only those whose `workspace` label passes the check."""
        if workspace_visible is None or "workspace" not in self.label_names:
            return lambda _key: True
        index = self.label_names.index("workspace")
        return lambda key: workspace_visible(key[index])


class Counter(_Metric):
    kind = "counter"

    def __init__(self, name: str, help_text: str, labels: Iterable[str] = ()) -> None:
        super().__init__(name, help_text, labels)
        self._values: dict[tuple[str, ...], float] = {}

    def inc(self, *labels: str, amount: float = 1.0) -> None:
        with self._lock:
            self._values[labels] = self._values.get(labels, 0.0) + amount

    def render(self, keep: SeriesFilter = lambda _key: True) -> list[str]:
        with self._lock:
            items = sorted(item for item in self._values.items() if keep(item[0]))
        return self.header() + [
            f"{self.name}{_labels(self.label_names, k)} {v:g}" for k, v in items
        ]


class Gauge(Counter):
    kind = "gauge"

    def set(self, *labels: str, value: float) -> None:
        with self._lock:
            self._values[labels] = value

    def remove(self, *labels: str) -> None:
        with self._lock:
            self._values.pop(labels, None)


class Histogram(_Metric):
    kind = "histogram"

    def __init__(self, name: str, help_text: str, labels: Iterable[str] = ()) -> None:
        super().__init__(name, help_text, labels)
        self._series: dict[tuple[str, ...], list[float]] = {}  # bucket counts + [sum, count]

    def observe(self, *labels: str, value: float) -> None:
        with self._lock:
            series = self._series.get(labels)
            if series is None:
                # a count per bucket and one for +Inf alone, then the sum, then the count
                series = self._series[labels] = [0.0] * (len(_BUCKETS) + 3)
            series[bisect.bisect_left(_BUCKETS, value)] += 1  # index len(_BUCKETS) = +Inf only
            series[-2] += value
            series[-1] += 1

    def render(self, keep: SeriesFilter = lambda _key: True) -> list[str]:
        lines = self.header()
        with self._lock:
            items = sorted((k, list(v)) for k, v in self._series.items() if keep(k))
        for key, series in items:
            running = 0.0
            names = (*self.label_names, "le")
            for bound, count in zip((*_BUCKETS, float("inf")), series, strict=False):
                running += count
                le = "+Inf" if bound == float("inf") else f"{bound:g}"
                lines.append(f"{self.name}_bucket{_labels(names, (*key, le))} {running:g}")
            lines.append(f"{self.name}_sum{_labels(self.label_names, key)} {series[-2]:.6f}")
            lines.append(f"{self.name}_count{_labels(self.label_names, key)} {series[-1]:g}")
        return lines


def _forget_label(metric: Counter | Histogram, label: str, value: str) -> None:
    """Drop every series of `metric` whose `label` is `value`."""
    at = metric.label_names.index(label)
    with metric._lock:
        series = metric._values if isinstance(metric, Counter) else metric._series
        for key in [k for k in series if k[at] == value]:
            del series[key]


class Metrics:
    """The daemon's metrics, one instance per running daemon."""

    def __init__(self) -> None:
        self.requests = Counter(
            "memhub_requests_total", "HTTP requests by route and status.", ("route", "status")
        )
        self.request_seconds = Histogram(
            "memhub_request_duration_seconds", "HTTP request latency by route.", ("route",)
        )
        self.reloads = Counter(
            "memhub_reloads_total", "Workspace reloads by result.", ("workspace", "result")
        )
        self.reload_seconds = Histogram(
            "memhub_reload_duration_seconds", "Time to build a snapshot.", ("workspace",)
        )
        self.generation = Gauge(
            "memhub_generation", "Generation served per workspace.", ("workspace",)
        )
        self.declarations = Gauge(
            "memhub_declarations", "Declarations served per workspace.", ("workspace",)
        )
        self.degraded = Gauge(
            "memhub_workspace_degraded",
            "1 when a workspace serves last good sources.",
            ("workspace",),
        )

    def forget_workspace(self, name: str) -> None:
        """Every series of a removed workspace: names come and go, series must not pile up."""
        for metric in (
            self.generation,
            self.declarations,
            self.degraded,
            self.reloads,
            self.reload_seconds,
        ):
            _forget_label(metric, "workspace", name)

    def render(
        self,
        *,
        workspace_visible: Callable[[str], bool] | None = None,
        with_declarations: bool = True,
        with_requests: bool = True,
    ) -> str:
        """The text format; with `workspace_visible`, only series of the workspaces it
        accepts; without `with_declarations`, no declaration counts at all; without
        `with_requests`, no request counts or latencies (they span every workspace)."""
        metrics: list[Counter | Histogram] = [self.requests, self.request_seconds] * with_requests
        metrics += [
            self.reloads,
            self.reload_seconds,
            self.generation,
            self.degraded,
        ]
        if with_declarations:
            metrics.insert(len(metrics) - 1, self.declarations)
        lines: list[str] = []
        for metric in metrics:
            lines.extend(metric.render(metric.series_filter(workspace_visible)))
        return "\n".join(lines) + "\n"
