"""Model knowledge: presets and exact checkpoint inspection -> ModelSpec."""
