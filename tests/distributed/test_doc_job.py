"""docs/distributed.md's first job runs as the page says: saved as train.py, started by the launcher on 2 ranks."""
from pathlib import Path

from workbench.testing import doc_pages

from .launch import ROOT, run

PAGE = Path(ROOT) / "docs" / "distributed.md"


def test_first_job_runs_under_the_launcher(tmp_path):
    (job,) = [b for b in doc_pages.blocks(PAGE) if b.code.startswith("# train.py")]
    assert "python -m workbench.distributed.run --nproc-per-node 2 train.py" in PAGE.read_text()
    script = tmp_path / "train.py"
    script.write_text(job.code + "import os\nprint('rank', os.environ['RANK'], 'done')\n")
    rc, out = run(str(script))
    assert rc == 0, out
    assert sorted(line for line in out.splitlines() if line.endswith(" done")) == ["rank 0 done", "rank 1 done"], out
