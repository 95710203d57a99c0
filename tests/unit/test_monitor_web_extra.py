"""`monitor --web` where the `web` extra (textual-serve) is not installed: one line naming the extra, exit 1, not a
traceback (issue 54). The package is made absent for the child alone: a sitecustomize on its path whose import
hook fails the import of textual_serve as a missing module does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ABSENT = """import sys
class _Absent:
    def find_spec(self, name, path=None, target=None):
        if name == "textual_serve" or name.startswith("textual_serve."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Absent())
"""


def test_monitor_web_without_the_web_extra_is_one_line(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(ABSENT)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{root}", "XDG_STATE_HOME": str(tmp_path)}
    for argv in (["--url", "http://127.0.0.1:9"], ["--replay", str(tmp_path / "none.jsonl")]):
        out = subprocess.run([sys.executable, "-m", "ktwizard", "monitor", "--web", "--no-gpu", *argv],
                             capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)  # fmt: skip
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 1 and len(lines) == 1, out.stderr[-2000:]
        assert "web extra" in lines[0] and "ktwizard[web]" in lines[0], lines[0]
