"Project-level checks: README in sync, settings file and defaults agree, the wheel carries every subpackage."
import importlib.util, subprocess, sys, zipfile
from pathlib import Path
import pytest
from calibkit.config import Settings, read_settings

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location('tasks', ROOT/'tasks.py')
tasks = importlib.util.module_from_spec(spec); spec.loader.exec_module(tasks)


def test_readme_is_generated_from_index_notebook():
    assert (ROOT/'README.md').read_text() == tasks.readme_text(), 'run `python3 tasks.py readme`'


def test_readme_opens_with_the_two_commands():
    first_block = (ROOT/'README.md').read_text().split('```bash\n', 1)[1].split('```', 1)[0]
    cmds = [l.split('#')[0].strip() for l in first_block.splitlines() if l.strip()]
    assert cmds == ['python3 tasks.py demo', 'python3 tasks.py test']
    assert (ROOT/'.ci'/'run').read_text().strip().endswith('exec python3 tasks.py test')


def test_settings_file_matches_builtin_defaults():
    assert read_settings(ROOT/'settings.ini') == Settings()


def test_wheel_contains_all_subpackages(tmp_path):
    subprocess.run([sys.executable, '-m', 'build', '--wheel', '--outdir', str(tmp_path), str(ROOT)],
                   check=True, capture_output=True)
    (wheel,) = tmp_path.glob('calibkit-*.whl')
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {str(p.relative_to(ROOT)) for p in (ROOT/'calibkit').rglob('*.py')}
    assert expected <= names, f'missing from the wheel: {sorted(expected - names)}'
