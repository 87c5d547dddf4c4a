"""The step estimate: samples read back from replies, and their median."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from herdsman.runtime.tracing.step_times import StepSample, estimate, step_samples


def _reply(seconds: float, model: str = "lead", pace: float | None = None) -> AIMessage:
    meta = {"step_timing": {"seconds": seconds, "model": model}}
    if pace is not None:
        meta["output_tokens_per_second"] = pace
    return AIMessage("ok", response_metadata=meta)


def test_samples_come_from_timed_replies_as_messages_or_their_json():
    messages = [HumanMessage("hi"), _reply(2.0), AIMessage("untimed"), _reply(4.5, "local", 9.0)]
    as_json = [m.model_dump() for m in messages]
    for given in (messages, as_json):
        assert step_samples(given) == [
            StepSample(model="lead", seconds=2.0),
            StepSample(model="local", seconds=4.5, output_tokens_per_second=9.0),
        ]


def test_the_estimate_is_the_median_of_the_newest_steps_of_the_model():
    samples = [
        StepSample(model="local", seconds=s, output_tokens_per_second=p)
        for s, p in [(100, 1.0), (3, 8.0), (5, 10.0), (4, None)]
    ]
    samples.append(StepSample(model="other", seconds=50))
    got = estimate(samples, "local", recent=3)  # the oldest (100 s) is left out
    assert (got.samples, got.seconds, got.output_tokens_per_second) == (3, 4, 9.0)
    assert estimate(samples, "nothing").model_dump() == {
        "model": "nothing",
        "samples": 0,
        "seconds": None,
        "output_tokens_per_second": None,
    }
