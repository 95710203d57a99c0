"""verify: does a running server serve? Known answers at a short prompt and past the layerwise-prefill threshold,
tool calls (plain and streamed) and reasoning through the model's parsers, each a `Verdict` (issue #51)."""
