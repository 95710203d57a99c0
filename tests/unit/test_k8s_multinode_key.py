"""A keyed fleet's GPU-only multi-node launch (`--k8s-multinode`) is keyed too: its leader serves the API the
router and clients reach, so it starts through the key launcher reading the fleet's Secret, like the KT workers;
the key itself is in no manifest."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
from test_fleet import XEON, fleet  # noqa: E402

from ktwizard.fleet.k8s import k8s_documents, secret_name  # noqa: E402

KEY = "sk-ktw-lws-Secret-0123456789"


def test_the_multinode_launch_of_a_keyed_fleet_needs_the_key(tmp_path):
    key = tmp_path / "key"
    key.write_text(KEY + "\n")
    key.chmod(0o600)
    f = fleet("kimi-k2.7-code", [XEON] * 4, context=65536, weights="/models/Kimi-K2.7-Code", api_key_file=str(key))
    docs = k8s_documents(f, weights_claim="w", multinode=True)
    assert KEY not in yaml.safe_dump_all(docs)
    lws = [d for d in docs if d["kind"] == "LeaderWorkerSet"]
    assert lws
    for d in lws:
        lwt = d["spec"]["leaderWorkerTemplate"]
        for role in ("leaderTemplate", "workerTemplate"):
            spec = lwt[role]["spec"]
            (c,) = spec["containers"]
            (vol,) = [v for v in spec["volumes"] if "secret" in v]
            assert vol["secret"]["secretName"] == secret_name(f)
            (mount,) = [m for m in c["volumeMounts"] if m["name"] == vol["name"]]
            assert mount["readOnly"] and c["command"][:2] == ["python3", "-c"]
            assert c["command"][3] == mount["mountPath"] + "/api-key"
            assert "--api-key=' + key" in c["command"][2]
