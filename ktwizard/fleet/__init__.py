"""KT replicas behind sglang-router: fleet plans, their compose and Kubernetes renderings, fleet launch."""
