"""Test stand-in for the SGLang server: same argv, log lines, endpoints and metric names; no GPU, no weights."""
