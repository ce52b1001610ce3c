"""`python3 tasks.py set-repo` points every badge and install cell at another
repository, and back, without touching anything else in the notebooks."""

import importlib.util
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_tasks(root: Path):
    """tasks.py as a module whose ROOT is ``root``."""
    spec = importlib.util.spec_from_file_location("tasks_under_test", ROOT / "tasks.py")
    tasks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tasks)
    tasks.ROOT = root
    return tasks


def test_set_repo_round_trip(tmp_path):
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    config = (ROOT / "_config.yml").read_text()
    tasks = load_tasks(tmp_path)
    ours = load_tasks(ROOT).repo_config()[0]  # the url: line, not a comment naming it
    fork = "https://github.com/someone-else/fork-of-the-book"

    (tmp_path / "_config.yml").write_text(config.replace(ours, fork))
    tasks.set_repo()
    for path in sorted((tmp_path / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        text = json.dumps(json.loads(path.read_text()))  # still valid JSON
        assert f"git+{fork}" in text, path.name
        assert "colab.research.google.com/github/someone-else/fork-of-the-book/" in text
        assert ours not in text, path.name

    (tmp_path / "_config.yml").write_text(config)
    tasks.set_repo()
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        assert (tmp_path / "notebooks" / path.name).read_bytes() == path.read_bytes()
