"""The demo's summary says which prompt each figure counts (issue 33).

Utilization is of what was sent (after compressing), zones of what pre-flight
measured before compressing: printed side by side unlabelled, "red 11" beside
"peak 0.827" (under the red line) read as a contradiction.
"""

from __future__ import annotations

from langgraph_ctx.cli.demo import DemoReport, format_report


def test_the_summary_labels_sent_utilization_and_measured_zones() -> None:
    report = DemoReport(thread_id="demo", turns_done=2, turns_total=2)
    report.add({"kind": "utilization", "data": {"utilization": 0.6, "zone": "green"}})
    report.add({"kind": "utilization", "data": {"utilization": 0.9, "zone": "red"}})
    report.add(
        {
            "kind": "compression",
            "data": {"utilization_after": 0.5, "ratio": 4.0, "entity_retention": 0.8},
        }
    )
    lines = format_report(report).splitlines()
    sent = next(line for line in lines if "peak" in line and "mean" in line)
    assert "peak 0.600" in sent  # the compressed call counts as sent (0.5), not 0.9
    assert any("as sent" in line for line in lines)
    zones = next(line for line in lines if "zones:" in line)
    assert "red 1" in zones and "measured before compressing" in zones
