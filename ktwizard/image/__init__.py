"""The SGLang-KT image: a Dockerfile rendered for the host's CPU class and GPUs, built through the Docker SDK."""
