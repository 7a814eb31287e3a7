"""TieredSettings: tiered compression's settings in one checked dataclass, given as
keywords or as ``settings=`` (issue 32)."""

from __future__ import annotations

import dataclasses

import pytest

from langgraph_ctx.errors import ConfigurationError
from langgraph_ctx.strategies import TieredCompression
from langgraph_ctx.strategies.tiered.settings import TieredSettings


def test_the_keywords_are_the_settings_fields_with_the_same_defaults() -> None:
    fields = {f.name: f.default for f in dataclasses.fields(TieredSettings)}
    keywords = TieredCompression.__init__.__kwdefaults__ or {}
    assert {name: keywords[name] for name in fields} == fields
    assert TieredCompression().settings == TieredSettings()


def test_settings_given_at_once_are_the_ones_the_planner_reads() -> None:
    settings = TieredSettings(target_utilization=0.4, summary_tokens=(80, 900))
    compression = TieredCompression(settings=settings)
    assert compression.planner.settings is settings
    assert compression.target_utilization == 0.4
    assert compression.summary_tokens == (80, 900)
    by_keywords = TieredCompression(target_utilization=0.4, summary_tokens=(80, 900))
    assert by_keywords.settings == settings


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("target_utilization", 1.0),
        ("protected_share", 0.0),
        ("min_protected_turns", 0),
        ("expected_ratio", 0.5),
        ("summary_tokens", (500, 100)),
        ("summary_tokens", (100,)),
        ("max_summary_layers", 0),
        ("prepare_headroom", 1.0),
        ("prepare_ahead", "yes"),
        ("summarizer_timeout", -1.0),
    ],
)
def test_a_bad_value_is_refused_naming_its_field(field: str, value: object) -> None:
    with pytest.raises(ConfigurationError) as caught:
        TieredSettings(**{field: value})  # type: ignore[arg-type]
    assert caught.value.field == field


def test_settings_and_its_fields_as_keywords_are_not_given_together() -> None:
    with pytest.raises(ConfigurationError) as caught:
        TieredCompression(settings=TieredSettings(), target_utilization=0.5)
    assert caught.value.field == "settings"
    with pytest.raises(ConfigurationError) as caught:
        TieredCompression(settings={"target_utilization": 0.5})  # type: ignore[arg-type]
    assert caught.value.field == "settings"


def test_settings_cannot_change_after_construction() -> None:
    compression = TieredCompression()
    with pytest.raises(dataclasses.FrozenInstanceError):
        compression.settings.target_utilization = 0.2  # type: ignore[misc]
    # Each field is shown on the middleware, read-only: a copy set there would not
    # reach the planner, which reads the settings.
    for field in dataclasses.fields(TieredSettings):
        if field.name != "summarizer_timeout":
            assert getattr(compression, field.name) == getattr(compression.settings, field.name)
    with pytest.raises(AttributeError, match="read-only"):
        compression.target_utilization = 0.2
    assert compression.planner.settings.target_utilization == TieredSettings().target_utilization
