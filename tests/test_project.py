"Project-level checks: README in sync, settings file and defaults agree, the wheel carries every subpackage."
import importlib.util, json, subprocess, sys, zipfile
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


def test_wheel_contains_all_subpackages(dist):
    "The wheel (built from the sdist, tests/conftest.py) holds every module of the checkout."
    wheel = dist[0]
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {str(p.relative_to(ROOT)) for p in (ROOT/'calibkit').rglob('*.py')}
    assert expected <= names, f'missing from the wheel: {sorted(expected - names)}'


def readme_section(title):
    text = (ROOT/'README.md').read_text()
    return text.split(f'## {title}', 1)[1].split('\n## ', 1)[0]


def test_readme_use_it_on_your_model_examples_run(tmp_path, monkeypatch, capsys):
    """Every python and bash block of the README's 'Use it on your model' section, in order, in a fresh folder, all in
    this process: a `calibkit ...` line is `calibkit.cli.main` of its arguments, what the console script calls (the
    process boundary itself, exit statuses and signals, is tested by test_cli*.py; a process per line cost ~10 s)."""
    import re, shlex
    from calibkit.cli import main
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv('CALIBKIT_QUIET', '1')
    blocks = re.findall(r'```(python|bash)\n(.*?)```', readme_section('Use it on your model'), re.S)
    assert [k for k, _ in blocks].count('bash') >= 2 and [k for k, _ in blocks].count('python') >= 3
    for kind, code in blocks:
        if kind == 'python':
            exec(compile(code, 'README.md', 'exec'), {})      # each block on its own (fresh namespace)
            continue
        for line in code.splitlines():
            cmd = shlex.split(line, comments=True)
            if not cmd: continue
            assert cmd[0] == 'calibkit'
            code = main([*cmd[1:], '--quiet'])
            assert code == 0, f'{line}\nexit {code}: {capsys.readouterr().err}'
    for out in ('test-calibration', 'iso', 'tfg', 'marginal', 'marginal-from-python'):
        assert (tmp_path/out/'report.html').is_file(), out
    groups = (tmp_path/'tfg'/'groups.csv').read_text()
    assert 'after' in groups and 'before' in groups
    got = json.loads((tmp_path/'recal'/'comparison.json').read_text())
    assert got['names'] == ['as given', 'histogram · per_class', 'isotonic · per_class', 'platt · per_class']
    assert got['meta']['grouper'] == 'tfg' and (tmp_path/'recal'/'table.tex').is_file()


def test_readme_quick_start_blocks_run_on_their_own(tmp_path, monkeypatch):
    "Every python block of the Quick start runs in a fresh namespace (none needs a name from an earlier one)."
    import re
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r'```python\n(.*?)```', readme_section('Quick start'), re.S)
    assert len(blocks) >= 3
    results = []
    for code in blocks:
        *body, last = code.rstrip().split('\n')
        ns = {}
        exec(compile('\n'.join(body), 'README.md', 'exec'), ns)
        results.append(eval(compile(last, 'README.md', 'eval'), ns))
    import altair as alt
    assert any(isinstance(r, alt.TopLevelMixin) for r in results), 'the Quick start draws a reliability diagram'


def test_readme_says_what_the_commands_do():
    "The README is for users and points contributors to CONTRIBUTING.md, which says what the two commands do."
    text = (ROOT/'README.md').read_text()
    for needed in ('CONTRIBUTING.md', 'calibkit/data/', '| `parquet` |', '| `studies` |', 'calibkit.multiclass',
                   'calibkit.diagnostics', '## Where to go next'):
        assert needed in text, needed
    assert 'data/README.md' not in text.replace('calibkit/data/README.md', '')
    assert 'apt-get' not in text and 'chromium' not in text.lower(), 'setup notes belong in CONTRIBUTING.md'
    contributing = (ROOT/'CONTRIBUTING.md').read_text()
    for needed in ("installs Debian's `chromium`", '.venv/apt.log', '.venv/setup.log', 'python3 tasks.py docs', '`_docs/`',
                   'Sphinx with myst-nb', 'Quarto', 'python3 tasks.py notebooks', 'python3 tasks.py demo', 'python3 tasks.py test'):
        assert needed in contributing, needed


def test_no_paragraph_appears_twice():
    "Neither the README nor the Contributing page repeats a paragraph (of more than one line)."
    for name in ('README.md', 'CONTRIBUTING.md'):
        paras = [p.strip() for p in (ROOT/name).read_text().split('\n\n') if p.strip().count('\n') >= 1]
        dups = {p[:60] for p in paras if paras.count(p) > 1}
        assert not dups, f'{name} repeats {sorted(dups)}'


def test_torch_pin_is_a_development_constraint_not_package_metadata():
    tomllib = pytest.importorskip("tomllib")   # Python >= 3.11
    project = tomllib.loads((ROOT/'pyproject.toml').read_text())['project']
    deps = project['dependencies'] + [d for ds in project['optional-dependencies'].values() for d in ds]
    assert not [d for d in deps if '==' in d], 'exact pins belong to tasks.py (DEV_CONSTRAINTS)'
    assert 'torch==2.13.0' in tasks.DEV_CONSTRAINTS
    assert any(d.startswith('torch>=') for d in project['optional-dependencies']['hf'])


def test_test_runs_see_the_example_plugin_and_the_demo_does_not():
    import os
    env = tasks.test_env()
    assert env['PYTHONPATH'].split(os.pathsep)[0] == str(tasks.TESTPLUGINS)
    assert env['CALIBKIT_QUIET'] == '1' and env['PYTHONHASHSEED'] == '0' and env['TZ'] == 'UTC'
    # pytest itself runs in the test environment; what matters is that `demo` does not use it
    import inspect
    assert 'test_env' not in inspect.getsource(tasks.demo)


def test_test_runs_cache_bytecode_in_the_venv_when_the_shell_turns_it_off(monkeypatch):
    "With PYTHONDONTWRITEBYTECODE set, test runs write bytecode to .venv/pycache (else every process compiles numpy...)."
    monkeypatch.delenv('PYTHONPYCACHEPREFIX', raising=False)
    monkeypatch.setenv('PYTHONDONTWRITEBYTECODE', '1')
    env = tasks.test_env()
    assert 'PYTHONDONTWRITEBYTECODE' not in env and env['PYTHONPYCACHEPREFIX'] == str(tasks.VENV/'pycache')
    monkeypatch.delenv('PYTHONDONTWRITEBYTECODE')
    env = tasks.test_env()                       # Python's own default (bytecode beside the modules) is left alone
    assert 'PYTHONDONTWRITEBYTECODE' not in env and 'PYTHONPYCACHEPREFIX' not in env


def _code_lines(path: Path):
    "The lines of an exported module a reader reads: nbdev's generated `__all__` list aside."
    lines = path.read_text(encoding='utf-8').splitlines()
    in_all = False
    for i, line in enumerate(lines, 1):
        in_all = line.startswith('__all__ = ') or (in_all and line.startswith(' ' * 11))
        if not in_all: yield i, line


def test_no_line_over_120_characters_in_the_package():
    "Issue 25: no line over 120 characters in calibkit/ (nbdev's _modidx.py and its __all__ wrapping aside)."
    too_long = [f'{p.relative_to(ROOT)}:{i} ({len(line)})' for p in sorted((ROOT/'calibkit').rglob('*.py'))
                if p.name != '_modidx.py' for i, line in _code_lines(p) if len(line) > 120]
    assert not too_long, too_long


def test_the_line_check_sees_long_lines(tmp_path):
    "The check above reads every line but nbdev's __all__ list."
    f = tmp_path/'m.py'
    f.write_text('"""doc"""\n__all__ = [\'a\',\n           \'b\']\n' + 'x = 1' + ' ' * 120 + '\n', encoding='utf-8')
    assert [i for i, _ in _code_lines(f)] == [1, 4]
