"""ktwizard: plan, launch and monitor SGLang + KTransformers servers for giant MoE models."""

__version__ = "0.1.0"
