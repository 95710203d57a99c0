"""An uninstalled flash-attn-4 can leave an unregistered flash_attn directory behind; remove it (image build step)."""

import pathlib
import shutil
import site

for sp in site.getsitepackages():
    stale = pathlib.Path(sp) / "flash_attn"
    if stale.exists() and not any(pathlib.Path(sp).glob("flash_attn-*.dist-info")):
        shutil.rmtree(stale)
