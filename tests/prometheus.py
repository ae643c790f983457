"""Reading /metrics in tests. A missing sample is a failure, never a silent 0: a test that
looks up a metric the relay does not export must not pass."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

Labels = tuple[tuple[str, str], ...]
Samples = dict[tuple[str, Labels], float]


def parse(exposition: str) -> Samples:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    if key not in samples:
        near = sorted(str(other) for other in samples if other[0] == name)
        raise AssertionError(f"no sample {key} in /metrics; {name} has: {near or 'none'}")
    return samples[key]


def counted(samples: Samples, name: str, expected: int, **labels: str) -> bool:
    """Whether a labelled counter shows `expected`: a combination of labels never counted has
    no sample at all, so 0 is only right when the sample is absent and the family is not."""
    if not any(other[0] == name for other in samples):
        raise AssertionError(f"no {name} in /metrics at all")
    key = (name, tuple(sorted(labels.items())))
    if expected == 0:
        return key not in samples
    return value(samples, name, **labels) == expected
